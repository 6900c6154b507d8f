package controlplane

import (
	"net/netip"
	"slices"
	"testing"
)

func TestSchedulerComponent(t *testing.T) {
	pki := pkiPaths("/cp")
	c := schedulerComponent("/bin/kube-scheduler", "/cp", pki, 40005, []string{"--kube-api-qps=100"})
	want := []string{"/bin/kube-scheduler",
		"--kubeconfig=/cp/scheduler.kubeconfig",
		"--authentication-kubeconfig=/cp/scheduler.kubeconfig",
		"--authorization-kubeconfig=/cp/scheduler.kubeconfig",
		"--client-ca-file=" + pki.CACert,
		"--authentication-skip-lookup=true",
		"--bind-address=127.0.0.1",
		"--secure-port=40005",
		"--tls-cert-file=/cp/pki/scheduler.crt",
		"--tls-private-key-file=/cp/pki/scheduler.key",
		"--leader-elect=false",
		"--kube-api-qps=100", // extra arguments last, so that they win
	}
	if !slices.Equal(c.Args, want) {
		t.Errorf("args\n%q\nwant\n%q", c.Args, want)
	}
	if c.Name != Scheduler || c.Ports["secure"] != 40005 || len(c.Ports) != 1 {
		t.Errorf("name %s, ports %v", c.Name, c.Ports)
	}
	if c.HealthURL != "https://127.0.0.1:40005/readyz" || c.MetricsURL != "https://127.0.0.1:40005/metrics" || c.Log != "/cp/kube-scheduler.log" {
		t.Errorf("health %s, metrics %s, log %s", c.HealthURL, c.MetricsURL, c.Log)
	}
}

// The controller manager gives every Node a podCIDR from a range that holds neither the Services'
// addresses nor the Nodes' own.
func TestControllerManagerAllocatesNodeCIDRs(t *testing.T) {
	c := controllerManagerComponent("/bin/kube-controller-manager", "/cp", pkiPaths("/cp"), 40003, nil)
	for _, want := range []string{"--allocate-node-cidrs=true", "--cluster-cidr=10.0.0.0/9", "--node-cidr-mask-size=24",
		"--service-cluster-ip-range=" + serviceCIDR} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("args lack %s: %q", want, c.Args)
		}
	}
	cluster, service := netip.MustParsePrefix(clusterCIDR), netip.MustParsePrefix(serviceCIDR)
	// agent.Template.FirstIP, and the last Node of the largest fleet fakelet runs (1,000,000).
	firstNode, lastNode := netip.MustParseAddr("10.128.0.1"), netip.MustParseAddr("10.143.66.64")
	if cluster.Contains(firstNode) || cluster.Contains(lastNode) {
		t.Errorf("cluster CIDR %s holds Node addresses (%s to %s)", cluster, firstNode, lastNode)
	}
	if !cluster.Contains(service.Addr()) || service.Bits() < cluster.Bits() {
		t.Fatalf("service range %s is not inside the cluster CIDR %s: the count below is wrong", service, cluster)
	}
	nodes := 1<<(nodeCIDRMaskSize-cluster.Bits()) - 1<<(nodeCIDRMaskSize-service.Bits())
	if nodes != 28672 {
		t.Errorf("%d Nodes get a podCIDR, want the 28,672 that the documentation says", nodes)
	}
	if pods := 1<<(32-nodeCIDRMaskSize) - 2; pods < 110 {
		t.Errorf("a podCIDR holds %d pods, fewer than the kubelet's default maxPods 110", pods)
	}
}

// Every component's extra arguments are recorded, so that an Up with other ones does not reuse it.
func TestExtraArgsNameEveryComponent(t *testing.T) {
	o := Options{EtcdArgs: []string{"-e"}, APIServerArgs: []string{"-a"}, ControllerManagerArgs: []string{"-c"}, SchedulerArgs: []string{"-s"}}
	got := describeArgs(o.extraArgs())
	if want := "etcd -e, kube-apiserver -a, kube-controller-manager -c, kube-scheduler -s"; got != want {
		t.Errorf("extra arguments %q, want %q", got, want)
	}
	if sameArgs(o.extraArgs(), Options{EtcdArgs: []string{"-e"}, APIServerArgs: []string{"-a"}, ControllerManagerArgs: []string{"-c"}}.extraArgs()) {
		t.Error("extra arguments that differ only in the scheduler's compare equal")
	}
}
