package lockstep

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/fleettest"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const ns = "fakelet"

var leasesGR = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

// cluster is a fake apiserver that grants every permission, and the shards' shared clock.
func cluster(t *testing.T) (*fake.Clientset, *testingclock.FakeClock) {
	t.Helper()
	client := fake.NewClientset()
	fleettest.APIServerLike(client)
	fleettest.GrantAll(client)
	return client, testingclock.NewFakeClock(t0)
}

var run = Run{What: "profile stop-10pct", Nodes: 12, Shards: 3, Hash: "0123456789abcdef"}

func options(client *fake.Clientset, clk *testingclock.FakeClock, shard string, log *bytes.Buffer) Options {
	if log == nil {
		log = &bytes.Buffer{}
	}
	return Options{Client: client, Namespace: ns, Fleet: "big", Holder: "host " + shard, Run: run,
		Delay: 2 * time.Minute, Duration: 10 * time.Minute, Clock: clk, Log: log}
}

func lease(t *testing.T, client *fake.Clientset) *coordinationv1.Lease {
	t.Helper()
	l, err := client.CoordinationV1().Leases(ns).Get(context.Background(), LeaseName("big"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func writes(client *fake.Clientset) []string {
	var out []string
	for _, a := range client.Actions() {
		if a.GetResource().Resource == "leases" && a.GetVerb() != "get" {
			out = append(out, a.GetVerb())
		}
	}
	return out
}

func TestFirstShardCreatesAndTheOthersJoin(t *testing.T) {
	client, clk := cluster(t)
	var log0, log1 bytes.Buffer
	first, err := Join(context.Background(), options(client, clk, "0/3", &log0))
	if err != nil {
		t.Fatal(err)
	}
	if want := t0.Add(2 * time.Minute); !first.At.Equal(want) {
		t.Errorf("start %v, want now + delay = %v", first.At, want)
	}
	l := lease(t, client)
	if l.Labels[fleetname.Label] != "big" || *l.Spec.HolderIdentity != "host 0/3" || l.Annotations[runAnnotation] != run.Hash {
		t.Errorf("lease labels %v holder %v annotations %v", l.Labels, *l.Spec.HolderIdentity, l.Annotations)
	}
	if got, want := *l.Spec.LeaseDurationSeconds, int32((2*time.Minute+10*time.Minute+expiryGrace)/time.Second); got != want {
		t.Errorf("lease duration %d s, want delay + profile + grace = %d s", got, want)
	}
	if !strings.Contains(log0.String(), "created Lease fakelet/fakelet-start-big") {
		t.Errorf("creator's log: %q", log0.String())
	}

	clk.Step(30 * time.Second) // the second shard starts later: it gets the same instant, not its own
	second, err := Join(context.Background(), options(client, clk, "1/3", &log1))
	if err != nil {
		t.Fatal(err)
	}
	if !second.At.Equal(first.At) {
		t.Errorf("second shard starts at %v, the first at %v", second.At, first.At)
	}
	if !strings.Contains(log1.String(), "joined Lease fakelet/fakelet-start-big by host 0/3") || !strings.Contains(log1.String(), "in 1m30s") {
		t.Errorf("joiner's log: %q", log1.String())
	}
}

func TestShardsJoiningAtOnceAgreeOnOneStart(t *testing.T) {
	client, clk := cluster(t)
	starts := make([]*Start, 8)
	var wg sync.WaitGroup
	for i := range starts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if starts[i], err = Join(context.Background(), options(client, clk, string(rune('a'+i)), nil)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	creators := 0
	for _, s := range starts {
		if s == nil {
			t.FailNow()
		}
		if !s.At.Equal(starts[0].At) {
			t.Errorf("starts differ: %v and %v", s.At, starts[0].At)
		}
		if s.created {
			creators++
		}
	}
	if creators != 1 {
		t.Errorf("%d shards think they created the Lease, want 1", creators)
	}
}

// TestCreateRaceLostReadsTheWinner: another shard creates the Lease between our decision and our
// create (AlreadyExists), with a start of its own: we take the winner's.
func TestCreateRaceLostReadsTheWinner(t *testing.T) {
	client, clk := cluster(t)
	winner := options(client, clk, "2/3", nil)
	winnerStart := t0.Add(time.Minute)
	once := sync.Once{}
	client.PrependReactor("create", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		handled := false
		once.Do(func() {
			if err := client.Tracker().Add(winner.lease(LeaseName("big"), t0, winnerStart)); err != nil {
				t.Fatal(err)
			}
			handled = true
		})
		if handled {
			return true, nil, apierrors.NewAlreadyExists(leasesGR, LeaseName("big"))
		}
		return false, nil, nil
	})
	s, err := Join(context.Background(), options(client, clk, "0/3", nil))
	if err != nil {
		t.Fatal(err)
	}
	if !s.At.Equal(winnerStart) || s.created {
		t.Errorf("start %v created %v, want the winner's %v and not ours", s.At, s.created, winnerStart)
	}
}

// TestLeaseDeletedBetweenCreateAndGetIsCreatedAgain: the Lease a create collided with is gone when
// we read it (its run ended): we create it again rather than fail.
func TestLeaseDeletedBetweenCreateAndGetIsCreatedAgain(t *testing.T) {
	client, clk := cluster(t)
	old := options(client, clk, "0/3", nil)
	if err := client.Tracker().Add(old.lease(LeaseName("big"), t0, t0.Add(time.Minute))); err != nil {
		t.Fatal(err)
	}
	once := sync.Once{}
	client.PrependReactor("get", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		handled := false
		once.Do(func() {
			if err := client.Tracker().Delete(a.GetResource(), ns, LeaseName("big")); err != nil {
				t.Fatal(err)
			}
			handled = true
		})
		if handled {
			return true, nil, apierrors.NewNotFound(leasesGR, LeaseName("big"))
		}
		return false, nil, nil
	})
	s, err := Join(context.Background(), options(client, clk, "1/3", nil))
	if err != nil {
		t.Fatal(err)
	}
	if !s.created || !s.At.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("start %v created %v, want a new Lease of ours", s.At, s.created)
	}
}

// TestRefusals: a Lease for another run, one whose start has passed, a stale one another shard left
// and a foreign object are refused with what is wrong and what to do, and left as they were.
func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(o *Options, clk *testingclock.FakeClock)
		want  []string
	}{
		{
			name: "another run",
			setup: func(o *Options, _ *testingclock.FakeClock) {
				o.Run = Run{What: "profile flap", Nodes: 15, Shards: 3, Hash: "fedcba9876543210"}
			},
			want: []string{"is for another run", "profile stop-10pct over 12 nodes in 3 shard(s) (parameters 0123456789abcdef)",
				"this shard runs profile flap over 15 nodes in 3 shard(s) (parameters fedcba9876543210)", "same profile, seed, --nodes"},
		},
		{
			name:  "late",
			setup: func(_ *Options, clk *testingclock.FakeClock) { clk.Step(2*time.Minute + 1500*time.Millisecond) },
			want:  []string{"began at 2026-03-01T12:02:00Z, before this shard joined (1.5s late)", "kubectl -n fakelet delete lease fakelet-start-big"},
		},
		{
			name:  "stale, another shard's",
			setup: func(_ *Options, clk *testingclock.FakeClock) { clk.Step(time.Hour) },
			want: []string{"Lease fakelet/fakelet-start-big is stale: host 0/3 wrote it", "began at 2026-03-01T12:02:00Z and expired at 2026-03-01T12:17:00Z",
				"kubectl -n fakelet delete lease fakelet-start-big"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, clk := cluster(t)
			if _, err := Join(context.Background(), options(client, clk, "0/3", nil)); err != nil {
				t.Fatal(err)
			}
			before := lease(t, client)
			client.ClearActions()
			o := options(client, clk, "1/3", nil)
			tc.setup(&o, clk)
			s, err := Join(context.Background(), o)
			if err == nil {
				t.Fatalf("joined at %v, want a refusal", s.At)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant it to say %q", err, w)
				}
			}
			if after := lease(t, client); after.UID != before.UID || after.ResourceVersion != before.ResourceVersion {
				t.Errorf("the refused Join changed the Lease")
			}
			if w := writes(client); len(w) != 1 || w[0] != "create" {
				t.Errorf("the refused Join wrote %v, want only the create that collided", w)
			}
		})
	}
	t.Run("not fakelet's", func(t *testing.T) {
		client, clk := cluster(t)
		foreign := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: LeaseName("big"), Namespace: ns}}
		if _, err := client.CoordinationV1().Leases(ns).Create(context.Background(), foreign, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := Join(context.Background(), options(client, clk, "0/3", nil))
		if err == nil || !strings.Contains(err.Error(), "is not fleet big's start Lease") {
			t.Errorf("Join over a foreign Lease: %v", err)
		}
		if l := lease(t, client); l.UID != "uid-1" || len(l.Annotations) != 0 {
			t.Errorf("the foreign Lease was changed: %+v", l)
		}
	})
}

// TestStaleLeaseOfOurOwnIsReplaced: the same shard (same holder) finds its own expired Lease from an
// earlier run: it deletes it and creates a new one, saying so; another shard's is refused (above).
func TestStaleLeaseOfOurOwnIsReplaced(t *testing.T) {
	client, clk := cluster(t)
	if _, err := Join(context.Background(), options(client, clk, "0/3", nil)); err != nil {
		t.Fatal(err)
	}
	old := lease(t, client)
	clk.Step(time.Hour)
	var log bytes.Buffer
	s, err := Join(context.Background(), options(client, clk, "0/3", &log))
	if err != nil {
		t.Fatal(err)
	}
	if l := lease(t, client); l.UID == old.UID || !s.created || !s.At.Equal(t0.Add(time.Hour+2*time.Minute)) {
		t.Errorf("lease uid %s (old %s), start %v: want a new Lease of ours", l.UID, old.UID, s.At)
	}
	if !strings.Contains(log.String(), "is stale (from a run that began at 2026-03-01T12:02:00Z): deleting it") {
		t.Errorf("log %q", log.String())
	}
}

func TestRefusedWithoutPermissionsOrNamespace(t *testing.T) {
	client, clk := cluster(t)
	fleettest.Grant(client, func(r *authorizationv1.ResourceAttributes) bool { return r.Verb != "delete" })
	_, err := Join(context.Background(), options(client, clk, "0/3", nil))
	if err == nil || !strings.Contains(err.Error(), "delete leases.coordination.k8s.io in fakelet (agree on the shards' start time") {
		t.Errorf("Join without delete: %v", err)
	}
	if w := writes(client); len(w) != 0 {
		t.Errorf("a refused Join wrote %v", w)
	}

	client, clk = cluster(t)
	client.PrependReactor("create", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, ns)
	})
	if _, err := Join(context.Background(), options(client, clk, "0/3", nil)); err == nil || !strings.Contains(err.Error(), "--coordination-namespace") {
		t.Errorf("Join without its namespace: %v", err)
	}

	// Any other failure to create is the error, not a reason to read what is not there.
	client, clk = cluster(t)
	client.PrependReactor("create", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd is down")
	})
	if _, err := Join(context.Background(), options(client, clk, "0/3", nil)); err == nil ||
		!strings.Contains(err.Error(), "create Lease fakelet/fakelet-start-big: etcd is down") {
		t.Errorf("Join when the create fails: %v", err)
	}
}

func TestReleaseDeletesOnlyTheCreatorsOwnLease(t *testing.T) {
	client, clk := cluster(t)
	creator, err := Join(context.Background(), options(client, clk, "0/3", nil))
	if err != nil {
		t.Fatal(err)
	}
	joiner, err := Join(context.Background(), options(client, clk, "1/3", nil))
	if err != nil {
		t.Fatal(err)
	}

	// Before the start, a creator that failed on its own leaves the Lease for its restart.
	if err := creator.Release(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	lease(t, client)
	restarted, err := Join(context.Background(), options(client, clk, "0/3", nil))
	if err != nil || !restarted.At.Equal(creator.At) || !restarted.created {
		t.Fatalf("restarted creator: %v, %+v; want the same start, and the Lease still its own", err, restarted)
	}

	clk.SetTime(creator.At.Add(time.Minute))
	if err := joiner.Release(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	lease(t, client) // a shard that only read it never deletes it
	if err := creator.Release(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoordinationV1().Leases(ns).Get(context.Background(), LeaseName("big"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Lease after its creator's run: %v, want deleted", err)
	}

	// A Lease another run made since, under the same name, is not the creator's to delete.
	other, err := Join(context.Background(), options(client, clk, "2/3", nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := restarted.Release(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if l := lease(t, client); l.UID != other.uid {
		t.Errorf("the newer Lease %s was replaced", l.UID)
	}
}

func TestInterruptedCreatorDeletesBeforeTheStart(t *testing.T) {
	client, clk := cluster(t)
	s, err := Join(context.Background(), options(client, clk, "0/3", nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoordinationV1().Leases(ns).Get(context.Background(), LeaseName("big"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Lease after an interrupted run: %v, want deleted", err)
	}
}
