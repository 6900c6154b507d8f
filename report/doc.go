// Package report builds a run's report from what the run recorded, and renders it: report.json
// (the versioned schema of docs/report.md), a summary table for the terminal, report.html (one
// self-contained page of charts) and perfdata.json (clusterloader2's PerfData, for perfdash).
//
// Build is a pure function of a Record, and every renderer a pure function of a Report, so a saved
// report.json renders the same text and HTML again (`fakelet report FILE.json`).
package report
