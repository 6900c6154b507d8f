package report

import (
	"strings"
	"testing"
	"time"

	"fakelet.dev/fakelet/measure/load"
)

var capacityStart = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// shardCapacity is shard i of 2's report of a capacity run of two steps, whose answer (the fleet's)
// is that 2000 nodes broke the failed heartbeats: each shard failed one, against at most one in the
// fleet. Its own levels hold everywhere; its mutating p99 is mutating[step].
func shardCapacity(i int, failed [2]float64, mutating [2]float64) *Report {
	r := build(fixture())
	r.Parameters.Nodes = 1000
	levels := func(k int) []Level {
		return []Level{
			{Level: "false-alarms", Value: 0, Limit: 0, Sum: true},
			{Level: "mutating-p99", Value: mutating[k], Limit: 1, Unit: "s"},
			{Level: "failed-heartbeats", Value: failed[k], Limit: 1, Sum: true},
		}
	}
	hold := func(k int) (time.Time, time.Time) {
		from := capacityStart.Add(time.Duration(k)*time.Minute + time.Duration(i)*time.Millisecond)
		return from, from.Add(30 * time.Second)
	}
	broke := Level{Level: "failed-heartbeats", Value: 2, Limit: 1, Sum: true, Broken: true}
	c := &Capacity{Start: 1000, Step: 1000, Max: 5000, Settle: "10s", Hold: "30s", Held: 1000, Broke: &broke,
		Shards: &CapacityShards{Shard: []string{"0/2", "1/2"}[i], Count: 2, Run: "0123456789abcdef", Start: capacityStart}}
	for k, n := range []int{1000, 2000} {
		from, to := hold(k)
		c.Steps = append(c.Steps, CapacityStep{Nodes: n, From: from, To: to, Levels: levels(k),
			Processes: []load.Process{{Component: load.APIServer, CPUCores: float64(i + 1)}}})
	}
	r.Capacity = c
	return r
}

// TestMergeOfCapacityShardsFindsTheFleetsAnswer: the shards' counts add up (one failed heartbeat
// each breaks the fleet's limit of one), the other levels are the worst shard's, each hold spans the
// shards', the control plane's CPU is the first report's, and the answer is found again from the
// merged levels.
func TestMergeOfCapacityShardsFindsTheFleetsAnswer(t *testing.T) {
	a, b := shardCapacity(0, [2]float64{0, 1}, [2]float64{0.2, 0.9}), shardCapacity(1, [2]float64{1, 1}, [2]float64{0.4, 0.5})
	b.Capacity.Held, b.Capacity.Broke = 0, nil // the answer is found again, not taken from the first report
	m, err := Merge([]*Report{b, a})
	if err != nil {
		t.Fatal(err)
	}
	c := m.Capacity
	if c == nil || c.Shards == nil || c.Shards.Shard != "" || c.Shards.Count != 2 || m.Parameters.Nodes != 2000 {
		t.Fatalf("merged capacity %+v, nodes %d", c, m.Parameters.Nodes)
	}
	if got, want := c.Answer(), "held 1000 nodes; 2000 broke failed-heartbeats 2 against at most 1 (100% over)"; got != want {
		t.Errorf("answer %q, want %q", got, want)
	}
	first, second := c.Steps[0], c.Steps[1]
	if l := first.Levels[2]; l.Value != 1 || l.Broken {
		t.Errorf("the first step's failed heartbeats %+v, want 1, held", l)
	}
	if l := second.Levels[1]; l.Value != 0.9 || l.Broken {
		t.Errorf("the second step's mutating p99 %+v, want the worst shard's 0.9 s, held", l)
	}
	if !first.From.Equal(capacityStart) || !first.To.Equal(capacityStart.Add(30*time.Second+time.Millisecond)) {
		t.Errorf("the first hold %v to %v, want the shards' earliest start to their latest end", first.From, first.To)
	}
	if first.Processes[0].CPUCores != 2 {
		t.Errorf("the control plane's CPU %v, want the first report's", first.Processes[0].CPUCores)
	}
	if a.Capacity.Steps[1].Levels[1].Value != 0.9 || a.Capacity.Shards.Shard != "0/2" {
		t.Errorf("the merge changed a shard's report")
	}
}

func TestMergeRefusesCapacityReportsOfOtherRuns(t *testing.T) {
	shard := func(i int, change func(*Capacity)) *Report {
		r := shardCapacity(i, [2]float64{0, 1}, [2]float64{0.2, 0.3})
		if change != nil {
			change(r.Capacity)
		}
		return r
	}
	for _, tc := range []struct {
		name    string
		reports []*Report
		want    string
	}{
		{"other steps", []*Report{shard(0, nil), shard(1, func(c *Capacity) { c.Step = 500 })},
			"merge: report 2 grew in steps of 500 from 1000 to 5000 nodes, settling 10s and held 30s; report 1 in steps of 1000"},
		{"another run", []*Report{shard(0, nil), shard(1, func(c *Capacity) { c.Shards.Run = "fedcba9876543210" })},
			"merge: report 2 is of shard 1/2 of run fedcba9876543210, started at 2026-03-01T12:00:00Z; report 1 of shard 0/2 of run 0123456789abcdef"},
		{"another start", []*Report{shard(0, nil), shard(1, func(c *Capacity) { c.Shards.Start = capacityStart.Add(time.Hour) })},
			"not shards of one capacity run"},
		{"a shard twice", []*Report{shard(0, nil), shard(0, nil)}, "merge: reports 1 and 2 are both of shard 0/2"},
		{"a shard missing", []*Report{shard(1, nil)}, "merge: no report of shard(s) [0/2] of the 2"},
		{"unsharded", []*Report{shard(0, func(c *Capacity) { c.Shards = nil })}, "merge: report 1 is of a capacity run that was not sharded"},
		{"with a run's", []*Report{build(fixture()), shard(0, nil)}, "merge: report 2 is a capacity run's and report 1 is not"},
		{"other limits", []*Report{shard(0, nil), shard(1, func(c *Capacity) { c.Steps[0].Levels[1].Limit = 2 })},
			"merge: the step of 1000 nodes: level mutating-p99 is held to 2 s in one shard and to 1 s in another"},
		{"not stopped together", []*Report{shard(0, nil), shard(1, func(c *Capacity) { c.Steps = c.Steps[:1] })},
			"merge: report 2 (shard 1/2) has 1 steps, report 1 (shard 0/2) 2: the shards did not stop together"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Merge(tc.reports); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("merge: %v, want %q", err, tc.want)
			}
		})
	}
}

func TestMergeLevelsLeavesOutNoLevel(t *testing.T) {
	got, err := MergeLevels([][]Level{
		{{Level: "false-alarms", Value: 1, Sum: true}, {Level: "renewal-p99", Value: 10.2, Limit: 11, Unit: "s"}},
		{{Level: "false-alarms", Value: 0, Sum: true}}, // status mode has no renewal level
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Value != 1 || !got[0].Broken || got[1].Value != 10.2 || got[1].Broken {
		t.Errorf("merged %+v, want one false alarm, broken, and the renewal p99, held", got)
	}
}
