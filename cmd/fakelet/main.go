// Command fakelet runs thousands of fake kubelets against a real kube-apiserver and measures how the
// control plane reacts.
package main

import (
	"fmt"
	"os"

	"fakelet.dev/fakelet/controlplane"
)

func main() {
	controlplane.RunWatchdogIfAsked() // the local control plane's watchdog is this binary started again
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "fakelet:", err)
		os.Exit(1)
	}
}
