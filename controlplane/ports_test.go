package controlplane

import (
	"fmt"
	"net"
	"testing"
)

func TestFreePorts(t *testing.T) {
	seen := map[int]bool{}
	for range 20 {
		ports, err := freePorts(etcdPorts)
		if err != nil {
			t.Fatal(err)
		}
		if len(ports) != etcdPorts {
			t.Fatalf("freePorts(%d) returned %d ports", etcdPorts, len(ports))
		}
		for _, p := range ports {
			if seen[p] {
				t.Fatalf("port %d handed out twice", p)
			}
			seen[p] = true
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				t.Fatalf("handed-out port %d is not free: %v", p, err)
			}
			l.Close()
		}
	}
}

func TestIsPortInUse(t *testing.T) {
	tests := []struct {
		log  string
		want bool
	}{
		{`E1129 failed to listen on 127.0.0.1:40001: listen tcp 127.0.0.1:40001: bind: address already in use`, true},
		{`{"level":"fatal","msg":"failed to start","error":"listen tcp 127.0.0.1:2380: bind: address already in use"}`, true},
		{`E1129 failed to create listener: open /x/apiserver.crt: no such file or directory`, false},
		{``, false},
	}
	for _, tt := range tests {
		if got := isPortInUse(tt.log); got != tt.want {
			t.Errorf("isPortInUse(%q) = %v, want %v", tt.log, got, tt.want)
		}
	}
}
