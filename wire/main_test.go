package wire

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: a connection's reader and
// writer end when it closes. Started by a benchmark as its server (serverProcessEnv), the test
// binary serves instead of testing.
func TestMain(m *testing.M) {
	if os.Getenv(serverProcessEnv) != "" {
		serveProcess()
		return
	}
	goleak.VerifyTestMain(m)
}
