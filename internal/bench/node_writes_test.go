package bench

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	testingclock "k8s.io/utils/clock/testing"
)

// nodeWritesScrape is the apiserver's metrics with the controllers' patches of Nodes, the fleet's
// own patches of their status, and its lease renewals.
func nodeWritesScrape(t *testing.T, controllers, status int) families {
	t.Helper()
	text := fmt.Sprintf("# TYPE apiserver_request_total counter\n"+
		"apiserver_request_total{verb=\"PATCH\",resource=\"nodes\",subresource=\"\",code=\"200\"} %d\n"+
		"apiserver_request_total{verb=\"PUT\",resource=\"nodes\",subresource=\"\",code=\"409\"} 1\n"+
		"apiserver_request_total{verb=\"PATCH\",resource=\"nodes\",subresource=\"status\",code=\"200\"} %d\n"+
		"apiserver_request_total{verb=\"PUT\",resource=\"leases\",subresource=\"\",code=\"200\"} %d\n", controllers, status, 100*status)
	p := expfmt.NewTextParser(model.UTF8Validation)
	f, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestOthersNodeWritesLeaveOutTheKubeletsStatus(t *testing.T) {
	if got := othersNodeWrites(nodeWritesScrape(t, 3000, 1000)); got != 3001 {
		t.Errorf("counted %.0f writes of the Nodes besides their status, want 3001", got)
	}
}

// The window waits while the controllers patch the Nodes, however much the fleet writes of their
// status meanwhile, and begins once they have written none for nodeWritesQuiet.
func TestTheWindowWaitsForTheControllersWritesToEnd(t *testing.T) {
	fc := testingclock.NewFakeClock(time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC))
	patches := []int{100, 140, 180, 200, 200, 200, 200, 200, 200, 200}
	scrapes := 0
	apiserver := func() (families, error) {
		i := min(scrapes, len(patches)-1)
		scrapes++
		return nodeWritesScrape(t, patches[i], 1000+10*scrapes), nil
	}
	var log bytes.Buffer
	began := fc.Now()
	if err := testNodeWrites(fc, apiserver).awaitEnd(context.Background(), time.Minute, &log); err != nil {
		t.Fatal(err)
	}
	waited := fc.Since(began)
	// The last patch was counted at the fourth scrape (6 s), then 10 s without.
	if want := 6*time.Second + nodeWritesQuiet; waited != want {
		t.Errorf("the window began %v after the settle, want %v", waited, want)
	}
	if want := "the controllers' writes to the Nodes ended 6s after the settle (201 in all)"; !strings.Contains(log.String(), want) {
		t.Errorf("the log says %q, want %q", log.String(), want)
	}
}

// Controllers that never stop writing hold the window back no longer than the bound.
func TestTheWindowBeginsAtTheBoundWhateverTheControllersWrite(t *testing.T) {
	fc := testingclock.NewFakeClock(time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC))
	n := 0
	apiserver := func() (families, error) { n += 20; return nodeWritesScrape(t, n, 1000), nil }
	var log bytes.Buffer
	began := fc.Now()
	if err := testNodeWrites(fc, apiserver).awaitEnd(context.Background(), 30*time.Second, &log); err != nil {
		t.Fatal(err)
	}
	waited := fc.Since(began)
	if waited != 30*time.Second {
		t.Errorf("the window began %v after the settle, want the bound, 30s", waited)
	}
	if !strings.Contains(log.String(), "still write to the Nodes") {
		t.Errorf("the log does not say the window began with the controllers still writing: %q", log.String())
	}
}

// testNodeWrites follows apiserver's scrapes on fc, each wait a step of it.
func testNodeWrites(fc *testingclock.FakeClock, apiserver func() (families, error)) nodeWrites {
	return nodeWrites{apiserver, fc, func(context.Context) error { fc.Step(nodeWritesPoll); return nil }}
}
