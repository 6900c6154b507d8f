// Package load turns the snapshots package scrape took into the load of each phase: request counts
// and rates, latency quantiles, API Priority and Fairness, watch events, CPU and memory, etcd writes
// and the node lifecycle controller's metrics, and the fleet's own view of its requests. Everything
// here is a pure function of the snapshots.
//
// Counters and histograms are read as increases between consecutive snapshots, so a component that
// restarted mid-phase (its counters reset) adds what it counted since the restart instead of a
// negative delta.
package load
