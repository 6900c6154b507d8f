// Package falsealarm finds the control plane's false alarms: a node that fakelet kept healthy (no
// profile op had stopped, degraded, partitioned or otherwise changed it) turned Ready=Unknown or
// False, got a not-ready or unreachable taint, or had a pod evicted. Each is counted by phase, group
// and event, and attributed to what the node's own requests show in the grace period before it
// (Attribute): fakelet's send lag, the server's latency, a rejection (429 or 5xx), or none of those
// (the controller's own doing).
//
// A Detector takes the fleet's requests as an agent.Recorder, the profile's actions and the
// transitions observe records, in bounded memory: per node, its last few requests, its latest
// action and its alarms waiting for attribution; the counts by key.
package falsealarm
