package falsealarm

import "time"

// Causes a false alarm is attributed to.
const (
	// CauseSendLag: the node's requests in the window waited longer on fakelet (from when their loop
	// tick was due to when they were ready to go) than on the server.
	CauseSendLag = "send_lag"
	// CauseServerLatency: they waited longer on the server (from sent to answered, or to the alarm
	// for a request still unanswered then) than on fakelet.
	CauseServerLatency = "server_latency"
	// CauseRejection: the server refused one of them with 429 Too Many Requests or a 5xx.
	CauseRejection = "rejection"
	// CauseNone: none of them was refused and neither wait reached MinDelay: the node lifecycle
	// controller's own doing.
	CauseNone = "none"
)

// MinDelay is the least time the window's requests must have waited, on fakelet or on the server, for
// a false alarm to be put down to that wait: the upstream SLO of a mutating call (1 s), which a
// healthy control plane meets with a wide margin, and fakelet's own warning threshold for its lag.
const MinDelay = time.Second

// Beat is one request of a node, as the attribution reads it.
type Beat struct {
	// Due is when the loop tick that sent it was due (zero for requests that are not a tick's first);
	// Lag the time from Due to when the request was ready to go.
	Due time.Time
	Lag time.Duration
	// Sent is when it went out; Latency the time to its answer.
	Sent    time.Time
	Latency time.Duration
	// Rejected says the answer was 429 or 5xx.
	Rejected bool
}

// Attribution is what the node's requests in the window before a false alarm show.
type Attribution struct {
	Cause string
	// SendLag and ServerLatency are the time, within the window, the node's requests spent waiting
	// on fakelet and on the server, summed over its requests.
	SendLag, ServerLatency time.Duration
	// Rejected counts the requests sent in the window and refused with 429 or 5xx.
	Rejected int
}

// Attribute says what caused a false alarm at at, from the node's requests in the window
// (at - grace, at]: the node lifecycle controller declares a node unknown once no heartbeat reached
// it for its grace period, so the heartbeats that should have reached it are those of that window.
// Each request adds to SendLag the part of [Due, Due+Lag] inside the window and to ServerLatency the
// part of [Sent, Sent+Latency] inside it; it counts as rejected if it was sent in the window. The
// cause is a rejection if any; else the larger wait if it is at least MinDelay; else none.
func Attribute(beats []Beat, at time.Time, grace time.Duration) Attribution {
	from := at.Add(-grace)
	var out Attribution
	for _, b := range beats {
		if !b.Due.IsZero() {
			out.SendLag += overlap(b.Due, b.Due.Add(b.Lag), from, at)
		}
		out.ServerLatency += overlap(b.Sent, b.Sent.Add(b.Latency), from, at)
		if b.Rejected && b.Sent.After(from) && !b.Sent.After(at) {
			out.Rejected++
		}
	}
	switch {
	case out.Rejected > 0:
		out.Cause = CauseRejection
	case max(out.SendLag, out.ServerLatency) < MinDelay:
		out.Cause = CauseNone
	case out.SendLag > out.ServerLatency:
		out.Cause = CauseSendLag
	default:
		out.Cause = CauseServerLatency
	}
	return out
}

// overlap is the length of [a, b] within (from, to].
func overlap(a, b, from, to time.Time) time.Duration {
	if a.Before(from) {
		a = from
	}
	if b.After(to) {
		b = to
	}
	return max(b.Sub(a), 0)
}
