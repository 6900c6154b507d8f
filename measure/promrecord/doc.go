// Package promrecord reads the record of a run from a Prometheus server that scraped it (fakelet
// report --prometheus), so that a run spread over several fakelet processes or machines gets one
// report, computed by package load and rendered by package report like any other.
//
// It queries the series the run's own scrapes keep (scrape.Selection), job by job. For each window
// (each phase, the whole run, and each step of the timelines) it builds the snapshots package load
// reads: one at the window's start with every counter and histogram bucket at zero, one at its end
// with sum by (its labels) (increase(series[window])), and the gauges (sum over the job's targets)
// at every step between. Prometheus corrects each target's counter resets, and the sum adds the
// fleet's shards (each a target of job fakelet) into one fleet.
//
// What only the fleet's processes knew (the node transitions behind each reaction, the per-node
// latencies, the nodes that never reacted) is not in Prometheus; a report read here says so in its
// Source's notes instead of estimating it.
package promrecord
