package fleettest

import "testing"

// Resolve returns c resolved (fleet.Config.Resolve, heartbeat.Config.Resolve), or fails the test:
// for a configuration that the test's own input must make work.
func Resolve[R any](t testing.TB, c interface{ Resolve() (R, error) }) R {
	t.Helper()
	r, err := c.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	return r
}
