package fleet

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"fakelet.dev/fakelet/internal/fleettest"
)

// The fleet's Node watch stores the agent's own Node when it is the version the watch decoded, so
// that a fleet keeps one Node a node, not the agent's and the watch's copies of the same version.
func TestTheNodeWatchKeepsTheAgentsNode(t *testing.T) {
	tf := startFleetWith(t, Config{Nodes: 3, RegisterQPS: 10}, func(tf *testFleet) { fleettest.ResourceVersions(tf.client) })
	tf.advance(t, time.Second)
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return tf.Progress().Ready == 3, nil }); err != nil {
		t.Fatalf("the fleet's watch saw %d Ready nodes, want 3", tf.Progress().Ready)
	}
	for i := range 3 {
		a := tf.Agent(i)
		obj, ok, err := tf.nodes.informer.GetStore().GetByKey(a.Name())
		if !ok || err != nil {
			t.Fatalf("the watch holds no Node %s (%v)", a.Name(), err)
		}
		stored := obj.(*corev1.Node)
		if kept := a.Kept(stored); kept != stored {
			t.Errorf("the watch holds a copy of %s at resourceVersion %s beside the agent's own", a.Name(), stored.ResourceVersion)
		}
		// The watch's event decoded after the agent's own answer of that version.
		decoded := stored.DeepCopy()
		got, _ := keepOneNode(tf.acfg.Template, tf.liveAgent)(decoded)
		if got == any(decoded) {
			t.Errorf("the watch would store its decoding of %s at resourceVersion %s, not the agent's Node", a.Name(), decoded.ResourceVersion)
		}
	}
	if err := tf.stop(); err != nil {
		t.Fatal(err)
	}
}
