// Package profiles holds fakelet's scenario format: the profiles users write to ask the control plane a
// question ("what happens when 10% of nodes die for two minutes?").
//
// It is pure data and pure computation, in the order a run uses it:
//
//   - Parse and Load decode a profile strictly and validate all of it, so that a mistake is reported
//     (file, line, field path, reason) before anything touches a cluster.
//   - Profile.Resolve picks the member nodes of each group for a fleet size and a seed.
//   - Plan.Schedule turns the phases into timed per-node events that the runner applies.
//
// Nothing here talks to a cluster or keeps a clock: the runner owns both. The format is documented in
// docs/profiles.md; the built-in profiles live in builtin/*.yaml.
package profiles
