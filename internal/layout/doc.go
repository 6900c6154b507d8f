// Package layout holds no code: its tests hold the module's imports to an explicit list of what each
// package may import, the one docs/architecture.md maps, keep out the arrows that once reached up the
// pipeline, and keep every page under docs/ linked to the README and that map.
package layout
