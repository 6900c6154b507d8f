package controlplane

// End-to-end tests: real etcd, kube-apiserver, kube-controller-manager and kube-scheduler from
// `make controlplane`.
// Skipped under -short; without it they fail, not skip, when the binaries are missing.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// requireBinaries skips under -short and fails when the control plane binaries are missing: an e2e
// run that silently skips would pass without testing anything.
func requireBinaries(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: starts a real control plane; skipped under -short")
	}
	if _, err := FindBinaries(""); err != nil {
		t.Fatalf("end-to-end tests need the control plane binaries: %v", err)
	}
}

// upForTest starts a control plane in dir and stops it when the test ends, whatever happens.
func upForTest(t *testing.T, dir string, opts Options) *ControlPlane {
	t.Helper()
	opts.Dir, opts.Progress, opts.dieWithParent = dir, testLog{t}, true
	t.Cleanup(func() {
		if err := Down(context.Background(), dir); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	cp, err := Up(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

// testLog sends Up's progress lines to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func clientset(t *testing.T, cfg *rest.Config) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestE2EUpAndDown(t *testing.T) {
	requireBinaries(t)
	t.Parallel()
	dir := privateTempDir(t)
	began := time.Now()
	cp := upForTest(t, dir, Options{})
	t.Logf("control plane up in %s", time.Since(began))
	ctx := t.Context()

	client, err := cp.MetricsClient()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("apiserver ready", func(t *testing.T) {
		if err := probe(ctx, client, cp.APIServerURL+"/readyz"); err != nil {
			t.Error(err)
		}
	})
	t.Run("admin lists namespaces", func(t *testing.T) {
		nss, err := clientset(t, cp.AdminConfig()).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, ns := range nss.Items {
			names = append(names, ns.Name)
		}
		for _, want := range []string{"default", "kube-system", "kube-node-lease"} {
			if !strings.Contains(strings.Join(names, " "), want) {
				t.Errorf("namespaces %v lack %s", names, want)
			}
		}
	})
	t.Run("admin kubeconfig file", func(t *testing.T) {
		if cp.Kubeconfig != filepath.Join(dir, "kubeconfig") {
			t.Errorf("Kubeconfig = %s", cp.Kubeconfig)
		}
		if _, err := os.Stat(cp.Kubeconfig); err != nil {
			t.Error(err)
		}
	})
	t.Run("controller manager healthy", func(t *testing.T) {
		kcm, _ := cp.state.Component(ControllerManager)
		if err := probe(ctx, client, kcm.HealthURL); err != nil {
			t.Error(err)
		}
	})
	t.Run("scheduler ready", func(t *testing.T) {
		sched, ok := cp.state.Component(Scheduler)
		if !ok {
			t.Fatal("no kube-scheduler in the state")
		}
		if err := probe(ctx, client, sched.HealthURL); err != nil {
			t.Error(err)
		}
	})
	t.Run("every metrics endpoint scrapes", func(t *testing.T) {
		want := map[string]string{
			Etcd:              "etcd_server_has_leader 1",
			APIServer:         "apiserver_request_total",
			ControllerManager: "workqueue_adds_total",
			Scheduler:         "scheduler_scheduling_algorithm_duration_seconds",
		}
		for _, ep := range cp.MetricsEndpoints() {
			body, err := scrape(ctx, client, ep.URL)
			if err != nil {
				t.Errorf("%s: %v", ep.Component, err)
				continue
			}
			if !strings.Contains(body, want[ep.Component]) {
				t.Errorf("%s metrics at %s lack %q", ep.Component, ep.URL, want[ep.Component])
			}
		}
	})
	t.Run("controller manager and scheduler metrics need a client certificate", func(t *testing.T) {
		anonymous := &http.Client{Transport: &http.Transport{TLSClientConfig: client.Transport.(*http.Transport).TLSClientConfig.Clone()}}
		anonymous.Transport.(*http.Transport).TLSClientConfig.Certificates = nil
		for _, name := range []string{ControllerManager, Scheduler} {
			c, _ := cp.state.Component(name)
			if _, err := scrape(ctx, anonymous, c.MetricsURL); err == nil || !strings.Contains(err.Error(), "403") {
				t.Errorf("anonymous scrape of %s's %s: %v, want 403 Forbidden", name, c.MetricsURL, err)
			}
		}
	})
	t.Run("scheduler binds a pod to a registered node, which has a podCIDR", func(t *testing.T) {
		testSchedulerBindsAPod(t, cp, client)
	})
	t.Run("node lifecycle controller monitors nodes", func(t *testing.T) {
		// It observes this histogram at each monitor pass, every --node-monitor-period (5 s), once
		// its informers have synced.
		const metric = "node_collector_update_all_nodes_health_duration_seconds_count"
		kcm, _ := cp.state.Component(ControllerManager)
		deadline := time.Now().Add(30 * time.Second)
		for {
			body, err := scrape(ctx, client, kcm.MetricsURL)
			if err == nil && metricValue(body, metric) >= 1 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not >= 1 after 30 s (last error %v)", metric, err)
			}
			time.Sleep(time.Second) // a metric has no event to wait on
		}
	})
	t.Run("kubelet credentials", func(t *testing.T) {
		const node = "fakelet-e2e-0"
		cfg, err := cp.ClientConfig(NodeUser(node), NodesGroup)
		if err != nil {
			t.Fatal(err)
		}
		kubelet := clientset(t, cfg)
		if _, err := kubelet.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("kubelet creates its own Node: %v", err)
		}
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: corev1.NamespaceNodeLease}}
		if _, err := kubelet.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
			t.Fatalf("kubelet creates its own Lease: %v", err)
		}
		// The Node authorizer and NodeRestriction hold a kubelet to its own objects.
		_, err = kubelet.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "someone-else"}}, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) {
			t.Errorf("kubelet %s creating another Node: %v, want Forbidden", node, err)
		}
	})
	t.Run("status", func(t *testing.T) {
		r, err := Status(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Healthy || len(r.Components) != 4 {
			t.Fatalf("Status = %+v, want 4 healthy components", r)
		}
		for _, c := range r.Components {
			if c.Process != "running" || c.Health != "ok" || c.RSS <= 0 {
				t.Errorf("%s: process %s, health %s, RSS %d", c.Name, c.Process, c.Health, c.RSS)
			}
		}
	})
	t.Run("attach", func(t *testing.T) {
		a, err := Attach(dir)
		if err != nil {
			t.Fatal(err)
		}
		if a.APIServerURL != cp.APIServerURL {
			t.Errorf("attached to %s, want %s", a.APIServerURL, cp.APIServerURL)
		}
		if _, err := clientset(t, a.AdminConfig()).CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
			t.Error(err)
		}
	})
	t.Run("up again reuses it", func(t *testing.T) {
		again, err := Up(ctx, Options{Dir: dir, Progress: testLog{t}})
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range again.State().Components {
			if c.PID != cp.state.Components[i].PID {
				t.Errorf("%s pid %d, want the running %d", c.Name, c.PID, cp.state.Components[i].PID)
			}
		}
	})
	t.Run("up again with other arguments refuses", func(t *testing.T) {
		_, err := Up(ctx, Options{Dir: dir, APIServerArgs: []string{"--max-requests-inflight=100"}})
		if err == nil || !strings.Contains(err.Error(), "already up with other extra arguments") {
			t.Errorf("Up with other arguments: %v", err)
		}
	})

	began = time.Now()
	if err := cp.Down(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("control plane down in %s", time.Since(began))
	for _, c := range cp.state.Components {
		if s := inspect(procfs{}, c); s != procGone {
			t.Errorf("after Down, %s (pid %d) is %s", c.Name, c.PID, s)
		}
	}
	if pids := processesMentioning(t, dir); len(pids) > 0 {
		t.Errorf("after Down, processes with %s on their command line: %v", dir, pids)
	}
	for _, gone := range []string{statePath(dir), filepath.Join(dir, "etcd"), cp.Kubeconfig, controllerManagerKubeconfig(dir), schedulerKubeconfig(dir)} {
		if _, err := os.Stat(gone); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after Down, %s: %v; want it removed", gone, err)
		}
	}
	if _, err := os.Stat(logPath(dir, APIServer)); err != nil {
		t.Errorf("after Down the logs should stay: %v", err)
	}
}

func TestE2ETwoControlPlanesAtOnce(t *testing.T) {
	requireBinaries(t)
	t.Parallel()
	dirs := []string{privateTempDir(t), privateTempDir(t)}
	cps := make([]*ControlPlane, len(dirs))
	errs := make([]error, len(dirs))
	var wg sync.WaitGroup
	for i, dir := range dirs {
		t.Cleanup(func() { Down(context.Background(), dir) })
		wg.Go(func() {
			cps[i], errs[i] = Up(t.Context(), Options{Dir: dir, dieWithParent: true})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	ports := map[int]string{}
	for _, cp := range cps {
		for _, c := range cp.state.Components {
			for role, p := range c.Ports {
				if other, taken := ports[p]; taken {
					t.Errorf("port %d used by %s and by %s %s in %s", p, other, c.Name, role, cp.Dir)
				}
				ports[p] = fmt.Sprintf("%s %s in %s", c.Name, role, cp.Dir)
			}
		}
	}
	// Each has its own etcd: a namespace created in one does not show in the other.
	ctx := t.Context()
	a, b := clientset(t, cps[0].AdminConfig()), clientset(t, cps[1].AdminConfig())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "only-in-the-first"}}
	if _, err := a.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace created in the first control plane, in the second: %v, want NotFound", err)
	}
	// One going down leaves the other alone.
	if err := cps[0].Down(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err := Status(ctx, dirs[1]); err != nil || !r.Healthy {
		t.Errorf("second control plane after the first went down: healthy=%v, %v", r != nil && r.Healthy, err)
	}
}

func TestE2EStaleStateIsCleaned(t *testing.T) {
	requireBinaries(t)
	t.Parallel()
	dir := privateTempDir(t)
	ctx := t.Context()
	first := upForTest(t, dir, Options{})
	apiserver, _ := first.state.Component(APIServer)

	// A crash: the apiserver dies without Down.
	if err := syscall.Kill(apiserver.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !waitGone(ctx, procfs{}, apiserver, 10*time.Second) {
		t.Fatal("apiserver still running 10 s after SIGKILL")
	}
	if _, err := Attach(dir); err == nil || !strings.Contains(err.Error(), "kube-apiserver") {
		t.Errorf("Attach to a control plane with a dead apiserver: %v, want an error naming it", err)
	}
	r, err := Status(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Healthy {
		t.Error("Status says healthy with the apiserver dead")
	}

	second := upForTest(t, dir, Options{})
	for _, old := range first.state.Components {
		if s := inspect(procfs{}, old); s != procGone {
			t.Errorf("stale %s (pid %d) is %s after the next Up", old.Name, old.PID, s)
		}
		if c, _ := second.state.Component(old.Name); c.PID == old.PID {
			t.Errorf("%s kept pid %d: not restarted", old.Name, old.PID)
		}
	}
	if _, err := clientset(t, second.AdminConfig()).CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("fresh control plane: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, APIServer+".previous.log")); err != nil {
		t.Errorf("the crashed run's apiserver log was not kept: %v", err)
	}
}

func TestE2EFailedStartStopsEverything(t *testing.T) {
	requireBinaries(t)
	t.Parallel()
	dir := privateTempDir(t)
	_, err := Up(t.Context(), Options{Dir: dir, APIServerArgs: []string{"--no-such-flag"}, dieWithParent: true})
	if err == nil {
		Down(context.Background(), dir)
		t.Fatal("Up with a bad apiserver flag succeeded")
	}
	t.Log(err)
	for _, want := range []string{"start kube-apiserver", "last lines of", "unknown flag: --no-such-flag"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q", want)
		}
	}
	if _, err := readState(dir); !errors.Is(err, errNoState) {
		t.Errorf("state after a failed Up: %v, want none", err)
	}
	// etcd was started before the apiserver failed; it must be gone too.
	if pids := processesMentioning(t, dir); len(pids) > 0 {
		t.Errorf("processes still running with %s on their command line: %v", dir, pids)
	}
}

// processesMentioning lists the live processes whose command line mentions dir: after Down, none of
// a control plane's components may be left.
func processesMentioning(t *testing.T, dir string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if info, err := (procfs{}).process(pid); err == nil && strings.Contains(strings.Join(info.cmdline, " "), dir) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func scrape(ctx context.Context, client *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(body), nil
}

// metricValue returns the value of an unlabelled sample in a Prometheus text exposition, or -1.
func metricValue(exposition, name string) float64 {
	s := bufio.NewScanner(strings.NewReader(exposition))
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}
