// Package report renders a run's record (package record, made by measure.Session or promrecord):
// report.json (the versioned schema of docs/report.md), a summary table for the terminal,
// report.html (one self-contained page of charts) and perfdata.json (clusterloader2's PerfData, for
// perfdash); and it merges the reports of a run's shards.
//
// Build computes no number of the record: it adds the schema's version and whether the run was
// generator bound. Every renderer is a pure function of a Report, so a saved report.json renders the
// same text and HTML again (`fakelet report FILE.json`).
package report
