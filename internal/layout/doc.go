// Package layout holds no code: its test keeps the module's imports pointing one way, down the
// pipeline that docs/architecture.md maps.
package layout
