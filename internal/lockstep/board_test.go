package lockstep

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/fleettest"
)

func openBoard(t *testing.T, client *fake.Clientset, i int, start time.Time, owner *Start) *Board {
	t.Helper()
	b, err := OpenBoard(context.Background(), BoardOptions{Client: client, Namespace: ns, Fleet: "big", Shard: fleetname.Shard{Index: i, Count: 2},
		Holder: "host", Run: run, Start: start, Owner: owner, Log: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBoardPostsAreEachShardsOwn: each shard posts in a Lease of its own, owned by the start Lease;
// each reads both; a run of the same parameters started at another time posts elsewhere; Close
// deletes the shard's own posts only, each on its UID.
func TestBoardPostsAreEachShardsOwn(t *testing.T) {
	client, clk := cluster(t)
	start, err := Join(context.Background(), options(client, clk, "0/2", nil))
	if err != nil {
		t.Fatal(err)
	}
	b0, b1 := openBoard(t, client, 0, start.At, start), openBoard(t, client, 1, start.At, start)
	if err := b0.Post(context.Background(), "100", []byte(`{"a":1}`), t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	got, err := b1.Read(context.Background(), "100")
	if err != nil || len(got) != 1 || string(got[0]) != `{"a":1}` {
		t.Fatalf("shard 1 read %v, %v: want shard 0's post alone", got, err)
	}
	if err := b1.Post(context.Background(), "100", []byte(`{"b":2}`), t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, err := b0.Read(context.Background(), "100"); err != nil || len(got) != 2 || string(got[1]) != `{"b":2}` {
		t.Fatalf("shard 0 read %v, %v: want both posts", got, err)
	}
	if !b1.KeepUntil().Equal(t0.Add(2 * time.Hour)) {
		t.Errorf("shard 1 keeps its posts until %v", b1.KeepUntil())
	}
	l, err := client.CoordinationV1().Leases(ns).Get(context.Background(), b0.PostName("100", 0), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if o := l.OwnerReferences; len(o) != 1 || o[0].Name != LeaseName("big") || o[0].UID != start.uid {
		t.Errorf("post's owners %+v, want the start Lease", o)
	}
	later := openBoard(t, client, 0, start.At.Add(time.Second), nil)
	if later.PostName("100", 0) == b0.PostName("100", 0) {
		t.Errorf("a run started at another time posts in the same Lease %s", b0.PostName("100", 0))
	}
	if err := b0.Post(context.Background(), "100", []byte(`{}`), t0); err == nil || !strings.Contains(err.Error(), "running twice") {
		t.Errorf("a second post of shard 0 on one step: %v", err)
	}

	// Shard 1's post is replaced by another object of that name: Close leaves it.
	name := b1.PostName("100", 1)
	if err := client.CoordinationV1().Leases(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoordinationV1().Leases(ns).Create(context.Background(), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := later.Read(context.Background(), "100"); err != nil {
		t.Errorf("a run reading only steps of its own: %v", err)
	}
	for _, b := range []*Board{b0, b1} {
		if err := b.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	leases, _ := client.CoordinationV1().Leases(ns).List(context.Background(), metav1.ListOptions{})
	var left []string
	for _, l := range leases.Items {
		left = append(left, l.Name)
	}
	if len(left) != 2 || !strings.Contains(strings.Join(left, " "), name) {
		t.Errorf("left %v, want the start Lease and the foreign object", left)
	}
}

// TestBoardReadRefusesAForeignObject: an object at a post's name that is not one is an error, not a
// verdict.
func TestBoardReadRefusesAForeignObject(t *testing.T) {
	client, _ := cluster(t)
	b := openBoard(t, client, 0, t0, nil)
	if _, err := client.CoordinationV1().Leases(ns).Create(context.Background(),
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: b.PostName("7", 1), Namespace: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Read(context.Background(), "7"); err == nil || !strings.Contains(err.Error(), "is not a post of this run") {
		t.Errorf("read %v, want the foreign Lease refused", err)
	}
}

func TestOpenBoardChecksPermissions(t *testing.T) {
	client := fake.NewClientset()
	fleettest.Grant(client, func(a *authorizationv1.ResourceAttributes) bool { return a.Verb != "create" })
	_, err := OpenBoard(context.Background(), BoardOptions{Client: client, Namespace: ns, Fleet: "big", Shard: fleetname.Shard{Count: 2}, Run: run})
	if err == nil || !strings.Contains(err.Error(), "create leases") {
		t.Errorf("open without create: %v", err)
	}
}
