//go:build tools

// Package tools pins the kwok that `make bin/kwok` builds, the peer of `fakelet bench --peer kwok`.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
