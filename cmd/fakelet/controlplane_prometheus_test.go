package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"fakelet.dev/fakelet/deploy"
)

func TestControlPlanePrometheusFlags(t *testing.T) {
	for _, args := range [][]string{{"controlplane", "up", "--help"}, {"controlplane", "prometheus-config", "--help"}} {
		root := newRootCommand()
		root.SetArgs(args)
		var out bytes.Buffer
		root.SetOut(&out)
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		want := []string{"--fakelet-target", "--controlplane-dir"}
		if args[1] == "up" {
			want = append(want, "--prometheus", "--prometheus-bin")
		} else {
			want = append(want, "--out")
		}
		for _, flag := range want {
			if !strings.Contains(out.String(), flag) {
				t.Errorf("%s does not mention %s", strings.Join(args, " "), flag)
			}
		}
	}
}

func TestPrometheusFlagsOptions(t *testing.T) {
	if o := (prometheusFlags{targets: []string{deploy.DefaultFakeletTarget}}).options(); o != nil {
		t.Errorf("without --prometheus: %+v, want none", o)
	}
	o := prometheusFlags{enabled: true, binary: "/opt/prometheus", targets: []string{"127.0.0.1:1", "127.0.0.1:2"}}.options()
	if o == nil || o.Binary != "/opt/prometheus" || !slices.Equal(o.FakeletTargets, []string{"127.0.0.1:1", "127.0.0.1:2"}) {
		t.Errorf("with --prometheus: %+v", o)
	}
}
