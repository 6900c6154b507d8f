package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// requirePrometheus fails, not skips, without a prometheus binary: CI installs Debian's (.ci/run).
func requirePrometheus(t *testing.T) {
	t.Helper()
	if _, err := FindPrometheus(""); err != nil {
		t.Fatalf("end-to-end test of the Prometheus server: %v", err)
	}
}

// upJobs asks Prometheus which jobs it scraped successfully (up == 1).
func upJobs(ctx context.Context, base string) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/query?query="+url.QueryEscape("up == 1"), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string
		Data   struct {
			Result []struct {
				Metric map[string]string
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, err
	}
	var jobs []string
	for _, s := range r.Data.Result {
		jobs = append(jobs, s.Metric["job"])
	}
	slices.Sort(jobs)
	return jobs, nil
}

func TestE2EPrometheus(t *testing.T) {
	requireBinaries(t)
	requirePrometheus(t)
	t.Parallel()
	dir := privateTempDir(t)
	// Nothing listens on port 1: the fakelet job is down, and everything else must be up.
	popts := &PrometheusOptions{FakeletTargets: []string{"127.0.0.1:1"}}
	cp := upForTest(t, dir, Options{Prometheus: popts})
	base := cp.PrometheusURL()
	if base == "" {
		t.Fatal("no Prometheus URL after Up with Prometheus")
	}
	want := []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "prometheus"}
	deadline := time.Now().Add(60 * time.Second) // the first scrape of each target comes within an interval (15 s)
	var jobs []string
	for {
		var err error
		jobs, err = upJobs(t.Context(), base)
		if err == nil && slices.Equal(jobs, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs up %v (%v), want %v; log %s", jobs, err, want, logTail(logPath(dir, Prometheus), logTailLines))
		}
		time.Sleep(time.Second)
	}

	r, err := Status(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(r.Components, func(c ComponentStatus) bool { return c.Name == Prometheus })
	if !r.Healthy || i < 0 || r.Components[i].Health != "ok" || r.Components[i].Process != "running" {
		t.Errorf("status: healthy %v, components %+v", r.Healthy, r.Components)
	}

	// A dead Prometheus leaves the control plane healthy and attachable; Up brings it back.
	c, _ := cp.state.Component(Prometheus)
	if err := syscall.Kill(c.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !waitGone(t.Context(), procfs{}, c, stopGracePeriod) {
		t.Fatal("prometheus still runs after SIGKILL")
	}
	if _, err := Attach(dir); err != nil {
		t.Errorf("attach with Prometheus dead: %v", err)
	}
	again, err := Up(t.Context(), Options{Dir: dir, Prometheus: popts, dieWithParent: true, Progress: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	c2, _ := again.state.Component(Prometheus)
	if c2.PID == c.PID || probe(t.Context(), http.DefaultClient, c2.HealthURL) != nil {
		t.Errorf("Up did not bring Prometheus back: pid %d (was %d)", c2.PID, c.PID)
	}
	if again.APIServerURL != cp.APIServerURL {
		t.Errorf("Up restarted the control plane (%s, was %s) instead of only Prometheus", again.APIServerURL, cp.APIServerURL)
	}

	// StopPrometheus stops it and forgets it; Down then removes its data.
	if err := again.StopPrometheus(t.Context()); err != nil {
		t.Fatal(err)
	}
	if inspect(procfs{}, c2) != procGone || again.PrometheusURL() != "" {
		t.Errorf("after StopPrometheus: process %s, URL %q", inspect(procfs{}, c2), again.PrometheusURL())
	}
	if _, err := os.Stat(filepath.Join(PrometheusDir(dir), "data")); err != nil {
		t.Errorf("StopPrometheus removed the data: %v", err)
	}
	if err := Down(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(PrometheusDir(dir), "data")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Prometheus data after Down: %v", err)
	}
}

func TestE2EUpWithoutPrometheusBinary(t *testing.T) {
	requireBinaries(t)
	dir := privateTempDir(t)
	_, err := Up(t.Context(), Options{Dir: dir, Prometheus: &PrometheusOptions{Binary: filepath.Join(dir, "no-prometheus")}, dieWithParent: true})
	if err == nil {
		Down(context.Background(), dir)
		t.Fatal("Up with a missing prometheus binary succeeded")
	}
	if _, statErr := os.Stat(statePath(dir)); !errors.Is(statErr, os.ErrNotExist) {
		t.Errorf("Up without prometheus started something: state %v", statErr)
	}
	var execErr *exec.Error
	if !errors.As(err, &execErr) {
		t.Errorf("error %v does not say the binary was not found", err)
	}
}
