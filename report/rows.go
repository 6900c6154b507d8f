package report

import (
	"fmt"
	"strings"

	"fakelet.dev/fakelet/measure/load"
)

// Row is one number about a phase's load, as the terminal table and fakelet compare show it.
type Row struct {
	Label string
	// Value returns the number, or false where the phase did not measure it.
	Value func(p load.Phase) (float64, bool)
	// Format prints a value: "%.1f", or a func for bytes.
	Format func(v float64) string
}

func fixed(prec int) func(float64) string {
	return func(v float64) string { return fmt.Sprintf("%.*f", prec, v) }
}

func ms(v float64) string { return fmt.Sprintf("%.1f", v*1000) }

// bytesText prints a byte count with a binary unit.
func bytesText(v float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	neg := v < 0
	if neg {
		v = -v
	}
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	s := fmt.Sprintf("%.1f %s", v, units[i])
	if i == 0 {
		s = fmt.Sprintf("%.0f B", v)
	}
	if neg {
		s = "-" + s
	}
	return s
}

func bytesRate(v float64) string { return bytesText(v) + "/s" }

// totalRequests sums the apiserver's requests, optionally of one verb and resource.
func totalRequests(p load.Phase, match func(r load.Requests) bool) (count float64, ok bool) {
	for _, r := range p.Requests {
		if match == nil || match(r) {
			count += r.Count
		}
	}
	return count, len(p.Requests) > 0
}

func kind(verb, resource, sub string) func(r load.Requests) bool {
	return func(r load.Requests) bool { return r.Verb == verb && r.Resource == resource && r.Subresource == sub }
}

func rate(p load.Phase, match func(load.Requests) bool) (float64, bool) {
	c, ok := totalRequests(p, match)
	if !ok || p.Seconds <= 0 {
		return 0, false
	}
	return c / p.Seconds, true
}

func latencyP99(verb, resource, sub string) func(load.Phase) (float64, bool) {
	return func(p load.Phase) (float64, bool) {
		for _, l := range p.Latency {
			if l.Verb == verb && l.Resource == resource && l.Subresource == sub {
				return l.P99, true
			}
		}
		return 0, false
	}
}

// sumOf sums f over list; an empty list is a zero that was measured.
func sumOf[T any](list []T, f func(T) float64) (float64, bool) {
	var s float64
	for _, x := range list {
		s += f(x)
	}
	return s, true
}

// apiserver keeps v where the window had two apiserver scrapes, and is "-" where it had not.
func apiserver(f func(load.Phase) (float64, bool)) func(load.Phase) (float64, bool) {
	return func(p load.Phase) (float64, bool) {
		if p.Seconds <= 0 {
			return 0, false
		}
		return f(p)
	}
}

// processRow is a row of one component's process: get of it, or none if it was not measured.
func processRow(component string, get func(load.Process) float64) func(load.Phase) (float64, bool) {
	return func(p load.Phase) (float64, bool) {
		pr, ok := processOf(p, component)
		return get(pr), ok
	}
}

// etcdRow is a row of etcd's load: get of it, or none if it was not measured.
func etcdRow(get func(*load.EtcdLoad) float64) func(load.Phase) (float64, bool) {
	return func(p load.Phase) (float64, bool) {
		if p.Etcd == nil {
			return 0, false
		}
		return get(p.Etcd), true
	}
}

// sendLagRow is a row of the fleet's send lag: get of it, or none if it was not measured.
func sendLagRow(get func(*load.SendLag) float64) func(load.Phase) (float64, bool) {
	return func(p load.Phase) (float64, bool) {
		if p.SendLag == nil {
			return 0, false
		}
		return get(p.SendLag), true
	}
}

func processOf(p load.Phase, component string) (load.Process, bool) {
	for _, pr := range p.Processes {
		if pr.Component == component {
			return pr, true
		}
	}
	return load.Process{}, false
}

func perSecond(f func(load.Phase) (float64, bool)) func(load.Phase) (float64, bool) {
	return func(p load.Phase) (float64, bool) {
		v, ok := f(p)
		if !ok || p.Seconds <= 0 {
			return 0, false
		}
		return v / p.Seconds, true
	}
}

// LoadRows are the rows of the load table, in order.
var LoadRows = []Row{
	{"apiserver requests/s", func(p load.Phase) (float64, bool) { return rate(p, nil) }, fixed(1)},
	{"  PUT leases/s", func(p load.Phase) (float64, bool) { return rate(p, kind("PUT", "leases", "")) }, fixed(1)},
	{"  PATCH nodes/status/s", func(p load.Phase) (float64, bool) { return rate(p, kind("PATCH", "nodes", "status")) }, fixed(1)},
	{"  PUT nodes/status/s", func(p load.Phase) (float64, bool) { return rate(p, kind("PUT", "nodes", "status")) }, fixed(1)},
	{"  GET nodes + leases/s", func(p load.Phase) (float64, bool) {
		return rate(p, func(r load.Requests) bool {
			return r.Verb == "GET" && (r.Resource == "nodes" || r.Resource == "leases")
		})
	}, fixed(1)},
	{"  errors (5xx, 429)/s", func(p load.Phase) (float64, bool) {
		return rate(p, func(r load.Requests) bool { return strings.HasPrefix(r.Code, "5") || r.Code == "429" })
	}, fixed(2)},
	{"request bytes/s", perSecond(func(p load.Phase) (float64, bool) {
		return sumOf(p.RequestBytes, func(b load.Bytes) float64 { return b.Bytes })
	}), bytesRate},
	{"response bytes/s", perSecond(func(p load.Phase) (float64, bool) {
		return sumOf(p.ResponseBytes, func(b load.Bytes) float64 { return b.Bytes })
	}), bytesRate},
	{"watch events/s", perSecond(func(p load.Phase) (float64, bool) {
		return sumOf(p.Watch, func(w load.Watch) float64 { return w.Events })
	}), fixed(1)},
	{"watch bytes/s", perSecond(func(p load.Phase) (float64, bool) {
		return sumOf(p.Watch, func(w load.Watch) float64 { return w.Bytes })
	}), bytesRate},
	{"p99 latency, all but watch (ms)", latencyP99("*", "*", ""), ms},
	{"  p99 PUT leases (ms)", latencyP99("PUT", "leases", ""), ms},
	{"  p99 PATCH nodes/status (ms)", latencyP99("PATCH", "nodes", "status"), ms},
	{"APF rejected", apiserver(func(p load.Phase) (float64, bool) {
		return sumOf(p.PriorityLevels, func(l load.PriorityLevel) float64 { return l.Rejected })
	}), fixed(0)},
	{"apiserver CPU-seconds", processRow(load.APIServer, func(pr load.Process) float64 { return pr.CPUSeconds }), fixed(1)},
	{"apiserver memory", processRow(load.APIServer, func(pr load.Process) float64 { return pr.MaxMemoryBytes }), bytesText},
	{"etcd bytes written (WAL)", etcdRow(func(e *load.EtcdLoad) float64 { return e.WALBytes }), bytesText},
	{"etcd db growth", etcdRow(func(e *load.EtcdLoad) float64 { return e.DBGrowth }), bytesText},
	{"etcd CPU-seconds", processRow(load.Etcd, func(pr load.Process) float64 { return pr.CPUSeconds }), fixed(1)},
	{"etcd p99 put latency (ms)", func(p load.Phase) (float64, bool) {
		var worst float64
		found := false
		for _, l := range p.EtcdLatency {
			if l.Verb == "update" || l.Verb == "create" || l.Verb == "GuaranteedUpdate" {
				worst, found = max(worst, l.P99), true
			}
		}
		return worst, found
	}, ms},
	{"controller-manager CPU-seconds", processRow(load.ControllerManager, func(pr load.Process) float64 { return pr.CPUSeconds }), fixed(1)},
	{"fleet requests/s", func(p load.Phase) (float64, bool) {
		v, _ := sumOf(p.Fleet, func(f load.FleetRequests) float64 { return f.OK + f.Errors })
		if len(p.Fleet) == 0 || p.Seconds <= 0 {
			return 0, false
		}
		return v / p.Seconds, true
	}, fixed(1)},
	{"fleet request errors", func(p load.Phase) (float64, bool) {
		v, _ := sumOf(p.Fleet, func(f load.FleetRequests) float64 { return f.Errors })
		return v, len(p.Fleet) > 0
	}, fixed(0)},
	{"fleet request bytes/s", fleetBytesRate(func(f load.FleetRequests) float64 { return f.RequestBytes }), fixed(0)},
	{"fleet response bytes/s", fleetBytesRate(func(f load.FleetRequests) float64 { return f.ResponseBytes }), fixed(0)},
	{"fleet send lag p50 ms", sendLagRow(func(l *load.SendLag) float64 { return l.P50 }), ms},
	{"fleet send lag p99 ms", sendLagRow(func(l *load.SendLag) float64 { return l.P99 }), ms},
}

// fleetBytesRate is the fleet's body bytes of one direction per second over a phase.
func fleetBytesRate(bytes func(load.FleetRequests) float64) func(load.Phase) (float64, bool) {
	return func(p load.Phase) (float64, bool) {
		if len(p.Fleet) == 0 || p.Seconds <= 0 {
			return 0, false
		}
		v, _ := sumOf(p.Fleet, bytes)
		return v / p.Seconds, true
	}
}
