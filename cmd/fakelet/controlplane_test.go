package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"fakelet.dev/fakelet/controlplane"
)

func TestPrintStatus(t *testing.T) {
	started := time.Date(2026, 11, 29, 14, 0, 0, 0, time.Local)
	now := started.Add(90 * time.Second)
	tests := []struct {
		name   string
		report controlplane.StatusReport
		want   string
	}{
		{
			name:   "nothing recorded",
			report: controlplane.StatusReport{Dir: "/tmp/cp"},
			want:   "no control plane in /tmp/cp\n",
		},
		{
			name: "apiserver killed",
			report: controlplane.StatusReport{
				Dir: "/tmp/cp", Recorded: true, StartedAt: started, APIServerURL: "https://127.0.0.1:40001",
				Kubeconfig: "/tmp/cp/kubeconfig",
				Components: []controlplane.ComponentStatus{
					{Name: controlplane.Etcd, PID: 101, Ports: map[string]int{"peer": 40003, "client": 40002, "metrics": 40004},
						Process: "running", Health: "ok", RSS: 40 << 20},
					{Name: controlplane.APIServer, PID: 102, Ports: map[string]int{"secure": 40001}, Process: "gone"},
				},
			},
			want: `control plane in /tmp/cp: NOT healthy (run ` + "`fakelet controlplane up`" + ` to replace it)
started 2026-11-29 14:00:00 (1m30s ago)
server https://127.0.0.1:40001, kubeconfig /tmp/cp/kubeconfig

COMPONENT       PID  PORTS                                  PROCESS  HEALTH  RSS
etcd            101  client=40002,metrics=40004,peer=40003  running  ok      40 MiB
kube-apiserver  102  secure=40001                           gone     -       -
`,
		},
		{
			name: "started by a run, another attached",
			report: controlplane.StatusReport{
				Dir: "/tmp/cp", Recorded: true, Healthy: true, StartedAt: started, APIServerURL: "https://127.0.0.1:40001",
				Kubeconfig: "/tmp/cp/kubeconfig", Users: 2, UntilLastUser: true,
			},
			want: `control plane in /tmp/cp: healthy
started 2026-11-29 14:00:00 (1m30s ago)
server https://127.0.0.1:40001, kubeconfig /tmp/cp/kubeconfig
started by a run: stops when the last of its 2 user(s) ends

COMPONENT  PID  PORTS  PROCESS  HEALTH  RSS
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			printStatus(&b, &tt.report, now)
			if b.String() != tt.want {
				t.Errorf("printStatus:\n%s\nwant:\n%s", b.String(), tt.want)
			}
		})
	}
}

func TestControlPlaneCommandFlags(t *testing.T) {
	root := newRootCommand()
	root.SetArgs([]string{"controlplane", "up", "--help"})
	var out bytes.Buffer
	root.SetOut(&out)
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--controlplane-dir", "--bin-dir", "--apiserver-arg", "--controller-manager-arg", "--scheduler-arg", "--etcd-arg", "--keep-data"} {
		if !strings.Contains(out.String(), flag) {
			t.Errorf("controlplane up --help does not mention %s", flag)
		}
	}
}
