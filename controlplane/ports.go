package controlplane

import (
	"fmt"
	"net"
	"strings"
	"sync"
)

// handedOut remembers every port this process picked. Between picking a port and the component
// binding it, the port is free again; without this, two control planes started by one process (two
// e2e tests in parallel) could be handed the same one. Another process can still take a picked port:
// Up then retries the component with new ports (see isPortInUse).
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// freePorts returns n distinct TCP ports on 127.0.0.1 that were free when picked and that this
// process has not handed out before.
func freePorts(n int) ([]int, error) {
	// Hold every listener until all n are picked, so that the kernel cannot return the same
	// port twice within one call.
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	handedOut.Lock()
	defer handedOut.Unlock()
	for tries := 0; len(ports) < n; tries++ {
		if tries > 100*n {
			return nil, fmt.Errorf("pick %d free ports on 127.0.0.1: every port offered was handed out before", n)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("pick a free port on 127.0.0.1: %w", err)
		}
		listeners = append(listeners, l)
		port := l.Addr().(*net.TCPAddr).Port
		if handedOut.ports[port] {
			continue
		}
		handedOut.ports[port] = true
		ports = append(ports, port)
	}
	return ports, nil
}

// isPortInUse tells whether a component's log says it could not bind its port: it lost the race
// between freePorts and its own listen, and a retry with new ports will do.
func isPortInUse(logTail string) bool {
	return strings.Contains(logTail, "address already in use")
}
