package access

import (
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestUnreachableClustersAreExplained points a real client at servers that cannot be talked to:
// the error says why, in words a user can act on.
func TestUnreachableClustersAreExplained(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "https://" + closed.Addr().String()
	closed.Close()

	otherCA := httptest.NewUnstartedServer(http.NotFoundHandler())
	otherCA.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	otherCA.StartTLS()
	defer otherCA.Close()

	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // accepts the request and never answers
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hung.Close()
	defer close(release)
	old := CheckTimeout
	CheckTimeout = 500 * time.Millisecond
	defer func() { CheckTimeout = old }()

	for _, tc := range []struct {
		name string
		cfg  *rest.Config
		want string
	}{
		{"nothing listening", &rest.Config{Host: refused}, "cannot reach the apiserver"},
		// The server's certificate is from httptest's own CA; the client trusts only the system roots.
		{"certificate from another CA", &rest.Config{Host: otherCA.URL}, "not signed by the certificate authority in the kubeconfig"},
		{"never answers", &rest.Config{Host: hung.URL}, "did not answer within 500ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, err := kubernetes.NewForConfig(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			begin := time.Now()
			err = Check(t.Context(), client, []Permission{{Verb: "list", Resource: "nodes", For: "cleanup"}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
			if d := time.Since(begin); d > 5*time.Second {
				t.Errorf("took %v to fail", d)
			}
			t.Log(err)
		})
	}
}
