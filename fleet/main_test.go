package fleet

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: every goroutine of an agent, a
// fleet and their clients must end with its context.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// resolved is cfg resolved, for a test whose cfg must work.
func resolved(t testing.TB, cfg Config) Resolved {
	t.Helper()
	r, err := cfg.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	return r
}
