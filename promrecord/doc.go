// Package promrecord reads the record of a run from a Prometheus server that scraped it (fakelet
// report --prometheus), so that a run spread over several fakelet processes or machines gets one
// report, built by report.Build like any other.
//
// It queries the same series the run's own scrapes keep (scrape.Selection), job by job, and turns the
// answers into snapshots at every phase boundary and every step between: a counter's or a histogram
// bucket's value at time t is sum by (its labels) (increase(series[t - from])), the increase since
// the window's start summed over every target of the job. Prometheus corrects each target's counter
// resets, and the sum adds the fleet's shards (each a target of job fakelet) into one fleet, so the
// load package's deltas between two such snapshots are the increase over the window between them.
// Gauges are the sum of the targets' values at t.
//
// What only the fleet's processes knew (the node transitions behind each reaction, the per-node
// latencies, the nodes that never reacted) is not in Prometheus; a report read here says so in
// its Source's notes instead of estimating it.
package promrecord
