package load

import (
	"reflect"
	"testing"
	"time"

	"fakelet.dev/fakelet/measure/scrape"
)

// The agents' watches in a window: the streams held at its last scrape, the lists, resumed watches
// and events added over it.
func TestFleetWatches(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	snap := func(at time.Duration, held, lists, opens, events float64) *scrape.Snapshot {
		fam := func(v float64) *scrape.Family {
			return &scrape.Family{Labels: []string{"resource"}, Series: map[string]*scrape.Series{
				scrape.Key("pods"): {Labels: []string{"pods"}, Value: v}}}
		}
		return &scrape.Snapshot{Component: Fleet, At: t0.Add(at), Families: map[string]*scrape.Family{
			scrape.FleetWatchesHeld: fam(held), scrape.FleetWatchLists: fam(lists),
			scrape.FleetWatchOpens: fam(opens), scrape.FleetWatchEvents: fam(events)}}
	}
	snaps := []*scrape.Snapshot{snap(0, 10, 10, 0, 100), snap(10*time.Second, 9, 12, 3, 150), snap(20*time.Second, 10, 13, 5, 300)}
	got := fleetWatches(snaps, func(x float64) float64 { return x / 20 })
	want := []FleetWatch{{Resource: "pods", Held: 10, Lists: 3, Watches: 5, Events: 200, EventsRate: 10}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fleetWatches = %+v, want %+v", got, want)
	}
	if got := fleetWatches(snaps[:1], func(x float64) float64 { return x }); got[0].Lists != 0 || got[0].Held != 10 {
		t.Errorf("one scrape: %+v, want what it held and nothing added", got)
	}
}
