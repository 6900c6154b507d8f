package observe

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
)

func pod(ready corev1.ConditionStatus, conds ...corev1.PodCondition) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "n0-0", Namespace: "default"},
		Spec:       corev1.PodSpec{NodeName: "n0"},
	}
	if ready != "" {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: ready})
	}
	p.Status.Conditions = append(p.Status.Conditions, conds...)
	return p
}

func terminating(p *corev1.Pod) *corev1.Pod {
	p.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	return p
}

// A pod created, made Ready by its agent, marked NotReady by the controller, Ready again, then evicted
// by the taint eviction controller (a graceful delete, then gone), and another pod deleted at once by
// someone else.
func TestRecorderPodTransitions(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := testingclock.NewFakePassiveClock(t0)
	r := NewRecorder(clock)
	h := r.PodHandler()
	evicted := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByTaintManager"}
	seq := [][2]*corev1.Pod{
		{nil, pod("")},
		{pod(""), pod(corev1.ConditionTrue)},
		{pod(corev1.ConditionTrue), pod(corev1.ConditionTrue)}, // a resync: nothing
		{pod(corev1.ConditionTrue), pod(corev1.ConditionFalse)},
		{pod(corev1.ConditionFalse), pod(corev1.ConditionTrue)},
		{pod(corev1.ConditionTrue), pod(corev1.ConditionTrue, evicted)},
		{pod(corev1.ConditionTrue, evicted), terminating(pod(corev1.ConditionTrue, evicted))},
		{terminating(pod(corev1.ConditionFalse, evicted)), nil}, // recorded when its deletion began
		{pod(corev1.ConditionTrue), nil},
	}
	for i, s := range seq {
		clock.SetTime(t0.Add(time.Duration(i) * time.Second))
		h(s[0], s[1])
	}
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	want := []Transition{
		{At: at(1), Node: "n0", Kind: PodReady, Type: "n0-0"},
		{At: at(3), Node: "n0", Kind: PodNotReady, Type: "n0-0"},
		{At: at(4), Node: "n0", Kind: PodReady, Type: "n0-0"},
		{At: at(6), Node: "n0", Kind: PodDeleted, Type: "n0-0", Reason: "DeletionByTaintManager"},
		{At: at(8), Node: "n0", Kind: PodDeleted, Type: "n0-0"},
	}
	if got := r.Transitions(); !reflect.DeepEqual(got, want) {
		t.Errorf("transitions:\n got %+v\nwant %+v", got, want)
	}
}

func TestRecorderPodReadyWhenFirstSeen(t *testing.T) {
	r := NewRecorder(nil)
	r.ObservePod(nil, pod(corev1.ConditionTrue))
	r.ObservePod(nil, pod(corev1.ConditionFalse)) // first seen not Ready: nothing to say yet
	if got := r.Transitions(); len(got) != 1 || got[0].Kind != PodReady {
		t.Errorf("transitions %+v, want one podReady", got)
	}
}
