package fleet

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: every goroutine of an agent, a
// fleet and their clients must end with its context.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
