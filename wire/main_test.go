package wire

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: a connection's reader and
// writer end when it closes.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
