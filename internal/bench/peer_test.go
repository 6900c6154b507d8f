package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"fakelet.dev/fakelet/controlplane"
)

// fakePeerEnv, set in the environment of this test binary, makes it the fake peer instead of the
// tests: its value is the directory it reports in.
const fakePeerEnv = "FAKELET_BENCH_FAKE_PEER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(fakePeerEnv); dir != "" {
		fakePeer(dir)
		return
	}
	os.Exit(m.Run())
}

// fakePeer stands in for kwok: it writes its command line to dir/args, then either fails at once
// (with FAKE_PEER_FAIL set) or runs until SIGTERM and writes dir/stopped.
func fakePeer(dir string) {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	if err := os.WriteFile(filepath.Join(dir, "args"), []byte(strings.Join(os.Args[1:], " ")), 0o644); err != nil {
		os.Exit(2)
	}
	if msg := os.Getenv("FAKE_PEER_FAIL"); msg != "" {
		fmt.Println(msg)
		os.Exit(3)
	}
	<-term
	_ = os.WriteFile(filepath.Join(dir, "stopped"), nil, 0o644)
}

// apiserverScrape is the apiserver's metrics with this many lease PUTs counted.
func apiserverScrape(t *testing.T, leasePUTs int) families {
	t.Helper()
	text := fmt.Sprintf("# TYPE apiserver_request_total counter\n"+
		"apiserver_request_total{verb=\"PUT\",resource=\"leases\",code=\"200\"} %d\n"+
		"apiserver_request_total{verb=\"PATCH\",resource=\"nodes\",code=\"200\"} 7\n", leasePUTs)
	p := expfmt.NewTextParser(model.UTF8Validation)
	f, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// testPeerRun is a peerRun of the fake peer; this test process stands in for the apiserver, and
// handedOver's answers are scripted.
func testPeerRun(t *testing.T, handedOver ...error) (peerRun, string, *[]map[string]int) {
	dir := t.TempDir()
	var snapped []map[string]int
	checks := 0
	return peerRun{
		peer: Peer{
			Name:   "fake",
			Binary: os.Args[0],
			Args: func(kubeconfig, dir string) ([]string, error) {
				return []string{"--kubeconfig", kubeconfig, "--config", filepath.Join(dir, "stages.yaml")}, nil
			},
			Env: []string{fakePeerEnv + "=" + dir},
		},
		kubeconfig: "/cp/admin.kubeconfig",
		dir:        dir,
		pids:       map[string]int{controlplane.APIServer: os.Getpid()},
		snapshot: func(pids map[string]int) (snap, error) {
			s := snap{at: time.Now(), cpu: map[string]time.Duration{}, rss: map[string]int64{}}
			for name, pid := range pids {
				var err error
				if s.cpu[name], err = cpuTime(pid); err != nil {
					return s, err
				}
				s.rss[name], _ = rss(pid)
			}
			s.apiserver = apiserverScrape(t, 100+500*len(snapped))
			snapped = append(snapped, pids)
			return s, nil
		},
		// Each answer in turn: nil is done, errNotYet is not yet, any other error a failed check;
		// after the script, not yet.
		handedOver: func(context.Context) (bool, error) {
			// A peer takes nothing over before it runs: this one has once it wrote its arguments,
			// after it began to catch SIGTERM.
			if err := waitForFile(filepath.Join(dir, "args")); err != nil {
				return false, err
			}
			checks++
			if checks > len(handedOver) {
				return false, nil
			}
			switch err := handedOver[checks-1]; {
			case err == nil:
				return true, nil
			case errors.Is(err, errNotYet):
				return false, nil
			default:
				return false, err
			}
		},
		poll:           time.Millisecond,
		handOverWithin: time.Minute,
		steady:         20 * time.Millisecond,
		log:            &strings.Builder{},
	}, dir, &snapped
}

var errNotYet = errors.New("not yet")

func waitForFile(path string) error {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
	}
	return fmt.Errorf("no %s after 10s", path)
}

func TestPeerRunMeasuresThePeerOnceItHoldsTheNodes(t *testing.T) {
	r, dir, snapped := testPeerRun(t, errNotYet, errors.New("apiserver busy"), nil)
	res, err := r.run(context.Background())
	if err != nil {
		t.Fatalf("run: %v\n%s", err, r.log)
	}
	args, _ := os.ReadFile(filepath.Join(dir, "args"))
	if want := "--kubeconfig /cp/admin.kubeconfig --config " + filepath.Join(dir, "stages.yaml"); string(args) != want {
		t.Errorf("peer's command line %q, want %q", args, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "stopped")); err != nil {
		t.Errorf("the peer was not stopped with SIGTERM before run returned: %v", err)
	}
	if len(*snapped) != 2 {
		t.Fatalf("%d snapshots, want one at each end of the window", len(*snapped))
	}
	for _, pids := range *snapped {
		if pids["fake"] == 0 || pids[controlplane.APIServer] != os.Getpid() {
			t.Errorf("snapshot of %v, want the peer's process and the control plane's", pids)
		}
	}
	if res.Name != "fake" || res.LeasePUTs != 500 || res.Window < r.steady || res.HandOver <= 0 {
		t.Errorf("result %+v: want the peer's name, the 500 lease PUTs counted in the window, a window of at least %v and a hand-over time", res, r.steady)
	}
	if res.RSS["fake"] <= 0 || res.RSS[controlplane.APIServer] <= 0 {
		t.Errorf("RSS %v: want the peer's and the apiserver's from /proc", res.RSS)
	}
	if _, ok := res.CPU["fake"]; !ok {
		t.Errorf("CPU %v has no entry for the peer", res.CPU)
	}
	if log := fmt.Sprint(r.log); !strings.Contains(log, "apiserver busy") {
		t.Errorf("log %q does not report the failed hand-over check", log)
	}
}

func TestPeerRunReportsAPeerThatExits(t *testing.T) {
	r, _, snapped := testPeerRun(t)
	r.peer.Env = append(r.peer.Env, "FAKE_PEER_FAIL=no stages found")
	_, err := r.run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "fake exited") || !strings.Contains(err.Error(), "no stages found") {
		t.Fatalf("run: %v; want that the peer exited, with the end of its log", err)
	}
	if len(*snapped) != 0 {
		t.Errorf("measured a window of a peer that had exited")
	}
}

func TestPeerRunGivesUpOnAHandOverThatDoesNotHappen(t *testing.T) {
	r, dir, snapped := testPeerRun(t)
	r.handOverWithin = 20 * time.Millisecond
	_, err := r.run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "did not hold every Lease") {
		t.Fatalf("run: %v; want the hand-over's timeout", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "stopped")); err != nil {
		t.Errorf("the peer was left running: %v", err)
	}
	if len(*snapped) != 0 {
		t.Errorf("measured a window without a hand-over")
	}
}
