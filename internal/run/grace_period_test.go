package run

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"fakelet.dev/fakelet/measure/falsealarm"
)

// TestGracePeriodOfAnotherClusterIsTheFlagsOrSaidToBeAssumed: on a cluster fakelet did not start, the
// controller's grace period is --node-monitor-grace-period's; without it the default is assumed,
// and the run says so.
func TestGracePeriodOfAnotherClusterIsTheFlagsOrSaidToBeAssumed(t *testing.T) {
	tgt := &Target{Config: &rest.Config{Host: "https://cluster.example:6443"}}
	var log bytes.Buffer
	if d, err := gracePeriod(20*time.Second, tgt, &log); err != nil || d != 20*time.Second || log.Len() != 0 {
		t.Errorf("with the flag: %v %v %q, want 20s and nothing said", d, err, log.String())
	}
	d, err := gracePeriod(0, tgt, &log)
	if err != nil || d != falsealarm.DefaultGrace {
		t.Errorf("without the flag: %v %v, want the default %v", d, err, falsealarm.DefaultGrace)
	}
	if !strings.Contains(log.String(), "assuming the controller's default --node-monitor-grace-period, 50s") {
		t.Errorf("the assumption is not said: %q", log.String())
	}
}
