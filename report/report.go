package report

import (
	"fakelet.dev/fakelet/measure/load"
	"fakelet.dev/fakelet/measure/record"
)

// SchemaVersion names the schema of report.json; docs/report.md documents it. A change that removes
// or redefines a field takes a new version.
const SchemaVersion = "fakelet.dev/report/v1"

// Report is everything a run measured: its record, whichever producer made it (package record), and
// what the report derives from it.
type Report struct {
	Version string `json:"version"`
	record.Record
	// GeneratorBound says fakelet's own send lag had a p99 above GeneratorBoundLag over the run: the
	// fleet, not the control plane, delayed the heartbeats, and the run measured fakelet.
	GeneratorBound bool `json:"generatorBound,omitempty"`
	// Capacity is the answer of fakelet capacity, whose phases are its steps' settles and holds; nil
	// for other runs.
	Capacity *Capacity `json:"capacity,omitempty"`
}

// GeneratorBoundLag is the send lag p99 above which a run says that fakelet, not the control plane,
// was the bottleneck: the upstream SLO of a mutating API call is 1 s, and a fleet that adds as much
// to its own heartbeats measures itself.
const GeneratorBoundLag = 1.0

// GeneratorBound says whether fakelet's own send lag over p had a p99 above GeneratorBoundLag.
func GeneratorBound(p load.Phase) bool {
	return p.SendLag != nil && p.SendLag.P99 > GeneratorBoundLag
}

// Build is the report of a recorded run: its record, with what the report derives from it.
func Build(rec record.Record) *Report {
	return &Report{Version: SchemaVersion, Record: rec, GeneratorBound: GeneratorBound(rec.Load.Run)}
}
