package e2e

import (
	"bufio"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/fleet"
)

// TestPerNodeConnectionsCarryEachNodesCertificate: 20 nodes with per-node connections on the local
// control plane. The fleet's credential is the deploy RBAC's ServiceAccount, which may impersonate
// none of these nodes, so every node that turns Ready did so with its own client certificate; and
// the apiserver holds a connection from this process for each node, one handshake each.
func TestPerNodeConnectionsCarryEachNodesCertificate(t *testing.T) {
	cp := controlPlane(t)
	sa := serviceAccountConfig(t, cp)
	u, err := url.Parse(sa.Host)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	before := serverConnsFromSelf(t, port)
	const nodes = 20
	rf := runFleet(t, sa, fleet.Config{Nodes: nodes, Fleet: "pernode", NamePrefix: "pernode", RegisterQPS: 50,
		ConnectionMode: fleet.ConnectionsPerNode,
		NodeCredentials: func(node string) ([]byte, []byte, error) {
			return cp.IssueClientCert(controlplane.NodeUser(node), []string{controlplane.NodesGroup})
		}})
	rf.waitReady(t, nodes, 90*time.Second)
	for _, n := range fleetNodes(t, admin(t, cp), "pernode") {
		if c := readyCondition(&n); c.Status != corev1.ConditionTrue {
			t.Errorf("node %s: Ready %s (%s), want True", n.Name, c.Status, c.Message)
		}
	}
	c := rf.Connections()
	if c.Mode != fleet.ConnectionsPerNode || c.Identity != fleet.IdentityByCertificate || c.Open != nodes || c.Dialed != nodes {
		t.Errorf("the fleet's connections: %+v, want %d per-node ones open and dialed, identity by client certificate", c, nodes)
	}
	// Besides the nodes', the fleet's own client and the test's admin client may each hold one.
	if grown := serverConnsFromSelf(t, port) - before; grown < nodes || grown > nodes+2 {
		t.Errorf("the apiserver holds %d more connections from this process, want %d (one per node)", grown, nodes)
	}
}

// serverConnsFromSelf counts the apiserver's established connections (local port port) whose other
// end is a socket of this process: the server's side of this process's connections, read from
// /proc/net/tcp and tcp6.
func serverConnsFromSelf(t *testing.T, port int) int {
	t.Helper()
	own := map[string]bool{} // socket inodes of this process
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		if link, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil {
			if inode, ok := strings.CutPrefix(link, "socket:["); ok {
				own[strings.TrimSuffix(inode, "]")] = true
			}
		}
	}
	type row struct{ local, remote, inode string }
	var established []row
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // the header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) > 9 && fields[3] == "01" { // ESTABLISHED
				established = append(established, row{fields[1], fields[2], fields[9]})
			}
		}
		f.Close()
	}
	server := fmt.Sprintf(":%04X", port)
	ours := map[string]bool{} // this process's ends of connections to the apiserver
	for _, r := range established {
		if own[r.inode] && strings.HasSuffix(r.remote, server) {
			ours[r.local] = true
		}
	}
	n := 0
	for _, r := range established {
		if strings.HasSuffix(r.local, server) && ours[r.remote] {
			n++
		}
	}
	return n
}
