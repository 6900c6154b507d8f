package load

import (
	"maps"
	"math"
	"slices"
	"sort"

	"fakelet.dev/fakelet/measure/scrape"
)

// process is one component's CPU and memory over snaps, if it exports them.
func process(name string, snaps []*scrape.Snapshot) (Process, bool) {
	if len(snaps) < 2 {
		return Process{}, false
	}
	p := Process{Component: name}
	var cpu []float64
	for _, s := range snaps {
		if v, ok := s.Value("process_cpu_seconds_total"); ok {
			cpu = append(cpu, v)
		}
		if v, ok := s.Value("process_resident_memory_bytes"); ok {
			p.MemoryBytes = v
			p.MaxMemoryBytes = max(p.MaxMemoryBytes, v)
		}
	}
	if len(cpu) == 0 {
		return Process{}, false
	}
	p.CPUSeconds = Increase(cpu)
	if secs := snaps[len(snaps)-1].At.Sub(snaps[0].At).Seconds(); secs > 0 {
		p.CPUCores = p.CPUSeconds / secs
	}
	return p, true
}

func etcdLoad(snaps []*scrape.Snapshot) *EtcdLoad {
	if len(snaps) < 2 {
		return nil
	}
	e := &EtcdLoad{}
	first, last := snaps[0], snaps[len(snaps)-1]
	e.DBSizeStart, _ = first.Value("etcd_mvcc_db_total_size_in_bytes")
	e.DBSizeEnd, _ = last.Value("etcd_mvcc_db_total_size_in_bytes")
	e.DBGrowth = e.DBSizeEnd - e.DBSizeStart
	e.DBInUseEnd, _ = last.Value("etcd_mvcc_db_total_size_in_use_in_bytes")
	e.WALBytes = counterIncrease(snaps, "etcd_disk_wal_write_bytes_total")
	if secs := last.At.Sub(first.At).Seconds(); secs > 0 {
		e.WALRate = e.WALBytes / secs
	}
	e.Puts = counterIncrease(snaps, "etcd_mvcc_put_total")
	e.ClientBytes = counterIncrease(snaps, "etcd_network_client_grpc_received_bytes_total")
	if f := Delta(snaps, "etcd_disk_wal_fsync_duration_seconds"); f != nil && f.Series[""] != nil {
		e.FsyncP99 = q(0.99, f.Series[""])
	}
	if f := Delta(snaps, "etcd_disk_backend_commit_duration_seconds"); f != nil && f.Series[""] != nil {
		e.CommitP99 = q(0.99, f.Series[""])
	}
	return e
}

// counterIncrease is the increase of an unlabelled counter.
func counterIncrease(snaps []*scrape.Snapshot, name string) float64 {
	if f := Delta(snaps, name); f != nil && f.Series[""] != nil {
		return f.Series[""].Value
	}
	return 0
}

func nodeCollector(snaps []*scrape.Snapshot) *NodeCollector {
	if len(snaps) < 2 {
		return nil
	}
	nc := &NodeCollector{}
	zones := map[string]*Zone{}
	get := func(z string) *Zone {
		if zones[z] == nil {
			zones[z] = &Zone{Zone: z, HealthMin: math.Inf(1)}
		}
		return zones[z]
	}
	for _, s := range snaps {
		if f := s.Families["node_collector_zone_health"]; f != nil {
			for _, sr := range f.Series {
				z := get(sr.Labels[0])
				z.HealthMin = min(z.HealthMin, sr.Value)
			}
		}
		if f := s.Families["node_collector_unhealthy_nodes_in_zone"]; f != nil {
			for _, sr := range f.Series {
				z := get(sr.Labels[0])
				z.UnhealthyMax = max(z.UnhealthyMax, sr.Value)
			}
		}
	}
	if f := Delta(snaps, "node_collector_evictions_total"); f != nil {
		for _, sr := range f.Series {
			get(sr.Labels[0]).Evictions += sr.Value
		}
	}
	for _, name := range slices.Sorted(maps.Keys(zones)) {
		z := zones[name]
		if math.IsInf(z.HealthMin, 1) {
			z.HealthMin = 0
		}
		nc.Zones = append(nc.Zones, *z)
	}
	sort.SliceStable(nc.Zones, func(i, j int) bool { return nc.Zones[i].Zone < nc.Zones[j].Zone })
	if f := Delta(snaps, "node_collector_update_all_nodes_health_duration_seconds"); f != nil && f.Series[""] != nil {
		nc.UpdateAllNodesHealthP99 = q(0.99, f.Series[""])
		nc.UpdateAllNodesHealthRuns = f.Series[""].Value
	}
	return nc
}

func fleetRequests(snaps []*scrape.Snapshot) []FleetRequests {
	reqs := Delta(snaps, scrape.FleetRequests)
	if reqs == nil {
		return nil
	}
	dur := Delta(snaps, scrape.FleetRequestDuration)
	sent, received := Delta(snaps, scrape.FleetRequestBytes), Delta(snaps, scrape.FleetResponseBytes)
	rows := map[string]*FleetRequests{}
	for _, s := range sortedSeries(reqs) {
		k := scrape.Key(s.Labels[0], s.Labels[1])
		r := rows[k]
		if r == nil {
			r = &FleetRequests{Verb: s.Labels[0], Resource: s.Labels[1]}
			rows[k] = r
		}
		if s.Labels[2] == "ok" {
			r.OK += s.Value
		} else {
			r.Errors += s.Value
		}
	}
	secs := 0.0
	if len(snaps) >= 2 {
		secs = snaps[len(snaps)-1].At.Sub(snaps[0].At).Seconds()
	}
	var out []FleetRequests
	keys := make([]string, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		r := rows[k]
		if r.OK+r.Errors == 0 {
			continue
		}
		if secs > 0 {
			r.Rate = (r.OK + r.Errors) / secs
		}
		if dur != nil && dur.Series[k] != nil {
			r.P50, r.P99 = q(0.5, dur.Series[k]), q(0.99, dur.Series[k])
		}
		if sent != nil && sent.Series[k] != nil {
			r.RequestBytes = sent.Series[k].Value
		}
		if received != nil && received.Series[k] != nil {
			r.ResponseBytes = received.Series[k].Value
		}
		out = append(out, *r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].OK+out[i].Errors > out[j].OK+out[j].Errors })
	return out
}

func sendLag(snaps []*scrape.Snapshot) *SendLag {
	f := Delta(snaps, scrape.FleetSendLag)
	if f == nil || f.Series[""] == nil || f.Series[""].Value <= 0 {
		return nil
	}
	s := f.Series[""]
	return &SendLag{Ticks: s.Value, P50: q(0.5, s), P99: q(0.99, s)}
}

// fleetWatches is the agents' watches by resource: the most the gauge held at a scrape of the
// window (its last scrape may come as the fleet stops), and what the counters added over the window.
func fleetWatches(snaps []*scrape.Snapshot, rate func(float64) float64) []FleetWatch {
	held := &scrape.Family{Series: map[string]*scrape.Series{}}
	for _, s := range snaps {
		f := s.Families[scrape.FleetWatchesHeld]
		if f == nil {
			continue
		}
		for k, x := range f.Series {
			if m := held.Series[k]; m == nil || x.Value > m.Value {
				held.Series[k] = x
			}
		}
	}
	if len(held.Series) == 0 {
		return nil
	}
	lists, opens, events := Delta(snaps, scrape.FleetWatchLists), Delta(snaps, scrape.FleetWatchOpens), Delta(snaps, scrape.FleetWatchEvents)
	value := func(f *scrape.Family, k string) float64 {
		if f == nil || f.Series[k] == nil {
			return 0
		}
		return f.Series[k].Value
	}
	var out []FleetWatch
	for _, s := range sortedSeries(held) {
		k := scrape.Key(s.Labels...)
		w := FleetWatch{Resource: s.Labels[0], Held: s.Value, Lists: value(lists, k), Watches: value(opens, k), Events: value(events, k)}
		w.EventsRate = rate(w.Events)
		out = append(out, w)
	}
	return out
}
