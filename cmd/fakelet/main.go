// Command fakelet runs thousands of fake kubelets against a real kube-apiserver and measures how the
// control plane reacts.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "fakelet:", err)
		os.Exit(1)
	}
}
