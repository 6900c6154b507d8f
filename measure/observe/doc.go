// Package observe records what the control plane did to a fleet's nodes, as seen from the fleet's
// process: every change of a node's conditions and taints, and the Leases appearing, disappearing and
// being renewed, each timestamped on arrival.
//
// It keeps transitions, not objects: a node that stays Ready costs one entry per condition and taint
// it started with, so ten thousand steady nodes cost a few megabytes however long they run. Lease
// renewals, which arrive every 10 s from every node, are counted per node, not listed.
//
// The transitions are plain data; reaction extraction (package reaction) and the node-state timeline
// (Timeline) are pure functions of them. A Recorder keeps only the first and last of them, and what
// a report needs of all of them as they arrive (their count, the Ready timeline, each node's taints),
// and passes each to its Notify functions, so that a run of hours with flapping nodes takes memory
// bounded by its nodes, not by its length.
package observe
