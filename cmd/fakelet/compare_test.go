package main

import (
	"strings"
	"testing"
	"time"
)

// TestCompareFlags: contradictory or impossible flags are refused before anything starts.
func TestCompareFlags(t *testing.T) {
	ok := compareFlags{nodes: 10, duration: time.Minute, settle: time.Second, scrapeInterval: time.Second, images: 5}
	for name, tc := range map[string]struct {
		edit func(*compareFlags)
		want string // "" for accepted
	}{
		"fresh":              {func(*compareFlags) {}, ""},
		"kubeconfig":         {func(c *compareFlags) { c.target.kubeconfig = "k" }, ""},
		"kubeconfig and dir": {func(c *compareFlags) { c.target.kubeconfig, c.target.controlPlaneDir = "k", "d" }, "give one or the other"},
		"context and args": {func(c *compareFlags) {
			c.target.context, c.target.controllerMgrArgs = "c", []string{"--x"}
		}, "give one or the other"},
		"insecure fresh": {func(c *compareFlags) { c.target.insecure = true }, "--insecure-skip-tls-verify"},
		"zero nodes":     {func(c *compareFlags) { c.nodes = 0 }, "--nodes"},
		"images":         {func(c *compareFlags) { c.images = 51 }, "--images"},
	} {
		t.Run(name, func(t *testing.T) {
			cf := ok
			tc.edit(&cf)
			err := cf.check()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("err = %v, want one naming %s", err, tc.want)
			}
		})
	}
	cf := ok
	cf.target.kubeconfig = "k"
	if err := cf.check(); err != nil || !cf.sameCluster {
		t.Errorf("--kubeconfig: sameCluster %v (%v), want true", cf.sameCluster, err)
	}
}
