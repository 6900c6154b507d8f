// Package capacity answers how many nodes a control plane holds before it starts to hurt them: it
// grows a fleet in steps (Config.Start, Step, Max), lets each step settle, holds it, and checks the
// service levels (Levels) over the hold; it stops at the first step that breaks one. The largest
// step that held every level is the answer, with the level that broke first and by how much.
//
// The step logic (Run) drives a Fleet, the interface a real fleet and its measurement implement and
// a test fakes, on an injected clock: it knows nothing of agents or scrapes.
package capacity
