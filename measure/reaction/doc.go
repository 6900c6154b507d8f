// Package reaction measures how the control plane reacted to each action a profile applied to each
// node: which reactions came (Ready turning Unknown or False, taints added, Ready=True and taints
// removed after a recovery), how long after the action and after the node's last heartbeat, and which
// expected reactions never came within the action's phase.
//
// Everything here is a pure function of recorded data: the actions applied (Action), the phases
// (Phase) and the transitions package observe recorded.
package reaction
