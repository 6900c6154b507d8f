// Package layout holds no code: its tests keep the module's imports pointing one way, down the
// pipeline that docs/architecture.md maps, and every page under docs/ linked to the README and that map.
package layout
