package agent

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	nodeutil "k8s.io/component-helpers/node/util"
	testingclock "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/internal/scheduler"
)

// The periodic report written directly is, byte for byte, the patch PatchNodeStatus computes.
func TestHeartbeatPatchMatchesPatchNodeStatus(t *testing.T) {
	tmpl, err := NewTemplate(TemplateOptions{Fleet: "patch", Images: MaxImages})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{Template: tmpl, Heartbeat: kubeletHeartbeat(t), Footprint: FootprintHeartbeat, Scheduler: scheduler.New(testingclock.NewFakeClock(t0))}
	a := New(cfg, Clients{}, "fakelet-00007", 7, "zone-1")
	r := newRun(a, context.Background())
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }
	base := tmpl.initialNode(a, at(0), a.health.conditions(nil, at(0)))
	base.UID, base.ResourceVersion = "uid-7", "42"
	foreign := corev1.NodeCondition{Type: "NetworkUnavailable", Status: corev1.ConditionFalse, Reason: "RouteCreated",
		Message: "routes created", LastHeartbeatTime: at(-time.Hour), LastTransitionTime: at(-time.Hour)}
	withForeign := *base
	withForeign.Status.Conditions = append([]corev1.NodeCondition{foreign}, base.Status.Conditions...)
	zeroBeat := *base
	zeroBeat.Status.Conditions = append([]corev1.NodeCondition(nil), base.Status.Conditions...)
	zeroBeat.Status.Conditions[2].LastHeartbeatTime = metav1.Time{}

	type tc struct {
		name string
		old  *corev1.Node
		now  metav1.Time
		edit func(*corev1.Node)
	}
	cases := []tc{
		{"five minutes on", base, at(5 * time.Minute), nil},
		{"the same second", base, at(300 * time.Millisecond), nil},
		{"a new second", base, at(1300 * time.Millisecond), nil},
		{"a foreign condition kept in place", &withForeign, at(5 * time.Minute), nil},
		{"an old heartbeat of zero", &zeroBeat, at(0), nil},
		{"one condition's heartbeat only", base, at(0), func(n *corev1.Node) { n.Status.Conditions[1].LastHeartbeatTime = at(time.Minute) }},
		{"a time zone other than UTC", base, metav1.NewTime(t0.Add(time.Hour).In(time.FixedZone("X", 5*3600))), nil},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 50 {
		cases = append(cases, tc{name: "random " + string(rune('a'+i%26)), old: base, now: at(time.Duration(rng.Int64N(int64(time.Hour)))),
			edit: func(n *corev1.Node) {
				for j := range n.Status.Conditions {
					if rng.IntN(2) == 0 {
						n.Status.Conditions[j].LastHeartbeatTime = base.Status.Conditions[j].LastHeartbeatTime
					}
				}
			}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			old := c.old
			node, changed := r.status.updated(old, a.health, c.now)
			if c.edit != nil {
				node.Status.Conditions = append([]corev1.NodeCondition(nil), node.Status.Conditions...)
				c.edit(node)
			}
			if changed {
				t.Fatal("the status changed beyond heartbeat times; the case is wrong")
			}
			for _, uid := range []types.UID{"", old.UID} {
				got, ok := heartbeatPatch(old.Status.Conditions, node.Status.Conditions, uid)
				if !ok {
					t.Fatal("heartbeatPatch declined a heartbeat-only change")
				}
				client := fake.NewSimpleClientset(old.DeepCopy())
				o, n := withUID(old, node, uid)
				_, want, err := nodeutil.PatchNodeStatus(client.CoreV1(), types.NodeName(old.Name), o, n)
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != string(want) {
					t.Errorf("uid %q: heartbeatPatch\n%s\nPatchNodeStatus\n%s", uid, got, want)
				}
			}
		})
	}
}

// Anything but heartbeat times goes PatchNodeStatus's way.
func TestHeartbeatPatchDeclinesOtherChanges(t *testing.T) {
	now := metav1.NewTime(t0)
	h := Health{}
	old := h.conditions(nil, now)
	for name, edit := range map[string]func([]corev1.NodeCondition) []corev1.NodeCondition{
		"status":  func(c []corev1.NodeCondition) []corev1.NodeCondition { c[3].Status = corev1.ConditionFalse; return c },
		"reason":  func(c []corev1.NodeCondition) []corev1.NodeCondition { c[0].Reason = "Other"; return c },
		"message": func(c []corev1.NodeCondition) []corev1.NodeCondition { c[1].Message = "other"; return c },
		"transition": func(c []corev1.NodeCondition) []corev1.NodeCondition {
			c[2].LastTransitionTime = metav1.NewTime(t0.Add(time.Hour))
			return c
		},
		"order":    func(c []corev1.NodeCondition) []corev1.NodeCondition { c[0], c[1] = c[1], c[0]; return c },
		"one less": func(c []corev1.NodeCondition) []corev1.NodeCondition { return c[:3] },
		"odd type": func(c []corev1.NodeCondition) []corev1.NodeCondition { c[0].Type = `Odd"Type`; return c },
	} {
		next := edit(append([]corev1.NodeCondition(nil), old...))
		if oldEdited := edit(append([]corev1.NodeCondition(nil), old...)); name == "odd type" {
			old2 := oldEdited
			if _, ok := heartbeatPatch(old2, next, ""); ok {
				t.Errorf("%s: heartbeatPatch accepted a type JSON escapes", name)
			}
			continue
		}
		if _, ok := heartbeatPatch(old, next, ""); ok {
			t.Errorf("%s: heartbeatPatch accepted a change beyond heartbeat times", name)
		}
	}
}
