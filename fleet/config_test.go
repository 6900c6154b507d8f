package fleet

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/heartbeat"
	"fakelet.dev/fakelet/internal/fleettest"
)

// TestOnlyResolveDefaultsAndChecks holds a fleet's configuration to one default and one check:
// Config.Resolve (with heartbeat.Config.Resolve) is the only way to either, and what comes after it
// takes a Resolved, which it alone makes.
func TestOnlyResolveDefaultsAndChecks(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[Config](), reflect.TypeFor[heartbeat.Config]()} {
		var methods []string
		for m := range typ.Methods() {
			methods = append(methods, m.Name)
		}
		if strings.Join(methods, " ") != "Resolve" {
			t.Errorf("%v has the methods %v: want Resolve alone, the one default and check", typ, methods)
		}
	}
	resolved := reflect.TypeFor[Resolved]()
	for f := range resolved.Fields() {
		if f.IsExported() {
			t.Errorf("Resolved has the exported field %s: a Resolved changed is not resolved", f.Name)
		}
	}
	for m := range resolved.Methods() {
		for out := range m.Type.Outs() {
			if out == reflect.TypeFor[Config]() && m.Name != "Config" {
				t.Errorf("Resolved.%s returns a Config: only Config() should, a copy to read", m.Name)
			}
		}
	}
	for name, fn := range map[string]any{"New": New, "NewWithClients": NewWithClients, "Permissions": Permissions} {
		if in := reflect.TypeOf(fn).In(0); in != resolved {
			t.Errorf("%s takes a %v: want a Resolved, so that it neither defaults nor checks again", name, in)
		}
	}
}

func TestTheZeroResolvedIsRefused(t *testing.T) {
	if _, err := New(Resolved{}, &rest.Config{Host: "https://127.0.0.1:1"}); err != errNotResolved {
		t.Errorf("New(Resolved{}) = %v; want %v", err, errNotResolved)
	}
	if r := (Resolved{}).WithNodeCredentials(func(string) ([]byte, []byte, error) { return nil, nil, nil }); r.c != nil {
		t.Errorf("the zero Resolved with node credentials is a Resolved of %+v", *r.c)
	}
	if _, err := (Resolved{}).WithFirstNodes(1); err == nil {
		t.Error("the zero Resolved's first node: no error")
	}
	client := fake.NewClientset()
	if _, err := NewWithClients(Resolved{}, client, []agent.Clients{{Core: client.CoreV1()}}); err != errNotResolved {
		t.Errorf("NewWithClients(Resolved{}) = %v; want %v", err, errNotResolved)
	}
}

func TestResolveDefaultsEveryEmptyValueOnce(t *testing.T) {
	c := fleettest.Resolve(t, Config{Nodes: 1}).Config()
	if c.Footprint != agent.DefaultFootprint || c.Identity != IdentityNode || c.ConnectionMode != ConnectionsShared || c.Connections != 1 ||
		c.Heartbeat.LeaseDurationSeconds != heartbeat.DefaultLeaseDurationSeconds || c.Heartbeat.RenewInterval != heartbeat.RenewInterval(heartbeat.DefaultLeaseDurationSeconds) {
		t.Errorf("Config{Nodes: 1} resolved to %+v", c)
	}
	if again := fleettest.Resolve(t, c).Config(); !reflect.DeepEqual(again.Heartbeat, c.Heartbeat) || again.RunID != c.RunID || again.Connections != c.Connections {
		t.Errorf("a resolved configuration resolved again changed: %+v, then %+v", c, again)
	}
}

func TestWithFirstNodesKeepsTheWholeFleetsConnections(t *testing.T) {
	r := fleettest.Resolve(t, Config{Nodes: 2500})
	first, err := r.WithFirstNodes(100)
	if err != nil {
		t.Fatal(err)
	}
	if c := first.Config(); c.Nodes != 100 || c.Connections != 3 {
		t.Errorf("the first 100 of 2500 nodes: %d nodes over %d connection sets; want 100 over 3", c.Nodes, c.Connections)
	}
	if r.Config().Nodes != 2500 {
		t.Errorf("WithFirstNodes changed the Resolved it was called on")
	}
	for _, n := range []int{0, 2501} {
		if _, err := r.WithFirstNodes(n); err == nil {
			t.Errorf("WithFirstNodes(%d) of 2500 nodes: no error", n)
		}
	}
}
