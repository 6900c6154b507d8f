package bench

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"

	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/fleetname"
)

// kwokStages are the node stages kwok plays; see the file for why these.
//
//go:embed kwok-stages.yaml
var kwokStages []byte

// KwokLeaseDuration is the Lease duration kwok renews with: the kubelet's default, which the fleet
// runs at too (fakelet run --lease-duration). kwok renews every quarter of it, with 4% jitter.
const KwokLeaseDuration = 40

// Peers are the names --peer accepts.
var Peers = []string{"kwok"}

// NewPeer returns the peer of that name, its binary found beside the control plane's (binDir, or
// where controlplane.FindBinaries looks), or an error that names how to get it.
func NewPeer(name, binDir string) (Peer, error) {
	if name != "kwok" {
		return Peer{}, fmt.Errorf("unknown peer %q: the only peer is kwok", name)
	}
	dir := binDir
	if dir == "" {
		bins, err := controlplane.FindBinaries("")
		if err != nil {
			return Peer{}, err
		}
		dir = filepath.Dir(bins.APIServer)
	}
	bin := filepath.Join(dir, "kwok")
	if fi, err := os.Stat(bin); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return Peer{}, fmt.Errorf("kwok is not in %s: run `make kwok` (it builds kwok v0.8.0, pinned in tools/kwok, into the repo's bin/)", dir)
	}
	return Peer{Name: "kwok", Binary: bin, Args: kwokArgs}, nil
}

// kwokArgs writes the stage file under dir and returns kwok's command line: the fleet's Nodes (by
// their label), Leases at the kubelet's duration, and logging at WARN, kwok's cheapest, since at INFO
// it logs every lease renewal.
func kwokArgs(kubeconfig, dir string) ([]string, error) {
	stages := filepath.Join(dir, "kwok-stages.yaml")
	if err := os.WriteFile(stages, kwokStages, 0o644); err != nil {
		return nil, err
	}
	return []string{
		"--kubeconfig", kubeconfig,
		"--config", stages,
		"--manage-nodes-with-label-selector", fleetname.Label,
		"--node-lease-duration-seconds", fmt.Sprint(KwokLeaseDuration),
		"--v", "WARN",
	}, nil
}
