package reaction

// MissingListed is how many of the nodes that never reacted a Summary names.
const MissingListed = 5

// Summary is one reaction to the actions of one op on one group in one phase.
type Summary struct {
	Phase string `json:"phase"`
	Group string `json:"group"`
	Op    string `json:"op"`
	Event string `json:"event"`
	// Actions is how many times the op was applied to nodes of the group in the phase.
	Actions int `json:"actions"`
	// Reacted is how many of those actions the event followed; Missing how many it should have
	// followed and did not within the phase, MissingNodes the first few of those nodes.
	Reacted      int      `json:"reacted"`
	Missing      int      `json:"missing"`
	MissingNodes []string `json:"missingNodes,omitempty"`
	// FromAction is the latency from the action; FromLastRenewal from the node's last heartbeat before
	// it, only for ops that silence the node (stop, partition, denyAuth).
	FromAction      Stats  `json:"fromAction"`
	FromLastRenewal *Stats `json:"fromLastRenewal,omitempty"`
	// Samples are the latencies themselves, in seconds, shortest first (reactions arrive in no order
	// that means anything): from the last renewal where measured, else from the action. Charts draw
	// their distribution. At most MaxSamples are kept: beyond, a uniform sample of them, and SamplesOf
	// is how many there were.
	Samples   []float64 `json:"samples,omitempty"`
	SamplesOf int       `json:"samplesOf,omitempty"`
}

// SummarizeResults groups results by phase, group, op and event, in the order of phases (then group, op,
// and the events by their median latency, so that they read in the order they happened).
func SummarizeResults(results []Result, phases []Phase) []Summary {
	ac := NewAccumulator()
	for _, r := range results {
		ac.Add(r)
	}
	return ac.Summaries(phases)
}
