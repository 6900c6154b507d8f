package fleet

import (
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"fakelet.dev/fakelet/transport"
)

// AdminUserAgent is the user agent of the fleet's own client (adminClient), by which an audit log
// tells the fleet's shared requests from its agents' (transport.UserAgent) and anyone else's.
const AdminUserAgent = "fakelet"

// adminClient is the fleet's own client, for what no kubelet does: the shared watch, checks and
// cleanup.
func adminClient(base *rest.Config) (kubernetes.Interface, error) {
	cfg := rest.CopyConfig(base)
	cfg.ContentType = transport.Protobuf
	cfg.AcceptContentTypes = transport.Protobuf + ",application/json"
	cfg.QPS, cfg.Burst = 200, 400
	cfg.UserAgent = AdminUserAgent
	return kubernetes.NewForConfig(cfg)
}
