package wire

import (
	"fmt"
	"testing"

	"golang.org/x/net/http2/hpack"
	"k8s.io/utils/clock"
)

// BenchmarkHeaderBlock compares ways to encode a lease renewal's header block, over 1000 agents
// sharing a connection: every field through the connection's encoder and its dynamic table; the
// per-agent fields (path, impersonated user) as never-indexed literals, so they do not evict the
// shared ones; and each agent's fields encoded once and copied (literals, no dynamic table).
func BenchmarkHeaderBlock(b *testing.B) {
	const agents = 1000
	shared := []hpack.HeaderField{
		{Name: ":method", Value: "PUT"}, {Name: ":scheme", Value: "https"}, {Name: ":authority", Value: "127.0.0.1:6443"},
		{Name: "accept", Value: "application/vnd.kubernetes.protobuf,application/json"},
		{Name: "user-agent", Value: "kubelet/v1.37.2 (linux/amd64) fakelet"},
		{Name: "content-type", Value: "application/vnd.kubernetes.protobuf"},
		{Name: "impersonate-group", Value: "system:nodes"},
		{Name: "authorization", Value: "Bearer 0123456789abcdef0123456789abcdef"},
		{Name: "content-length", Value: "263"}, {Name: "accept-encoding", Value: "gzip"},
	}
	perAgent := make([][]hpack.HeaderField, agents)
	for i := range perAgent {
		name := fmt.Sprintf("fakelet-%05d", i)
		perAgent[i] = []hpack.HeaderField{
			{Name: ":path", Value: "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/" + name + "?timeout=10s"},
			{Name: "impersonate-user", Value: "system:node:" + name},
		}
	}
	run := func(b *testing.B, sensitive bool) {
		var buf headerBuffer
		enc := hpack.NewEncoder(&buf)
		bytes := 0
		i := 0
		for b.Loop() {
			buf.b = buf.b[:0]
			for _, f := range shared {
				_ = enc.WriteField(f)
			}
			for _, f := range perAgent[i%agents] {
				f.Sensitive = sensitive
				_ = enc.WriteField(f)
			}
			bytes += len(buf.b)
			i++
		}
		b.ReportMetric(float64(bytes)/float64(b.N), "bytes/block")
	}
	b.Run("dynamic table", func(b *testing.B) { run(b, false) })
	b.Run("dynamic table, agents' fields never indexed", func(b *testing.B) { run(b, true) })
	b.Run("shared fields indexed, agents' fields precomputed", func(b *testing.B) {
		blocks := make([][]byte, agents)
		for i := range blocks {
			var buf headerBuffer
			enc := hpack.NewEncoder(&buf)
			for _, f := range perAgent[i] {
				f.Sensitive = true
				_ = enc.WriteField(f)
			}
			blocks[i] = buf.b
		}
		var buf headerBuffer
		enc := hpack.NewEncoder(&buf)
		bytes := 0
		i := 0
		for b.Loop() {
			buf.b = buf.b[:0]
			for _, f := range shared {
				_ = enc.WriteField(f)
			}
			buf.b = append(buf.b, blocks[i%agents]...)
			bytes += len(buf.b)
			i++
		}
		b.ReportMetric(float64(bytes)/float64(b.N), "bytes/block")
	})
	b.Run("precomputed literals", func(b *testing.B) {
		blocks := make([][]byte, agents)
		for i := range blocks {
			var buf headerBuffer
			enc := hpack.NewEncoder(&buf)
			for _, f := range append(append([]hpack.HeaderField{}, shared...), perAgent[i]...) {
				f.Sensitive = true
				_ = enc.WriteField(f)
			}
			blocks[i] = buf.b
		}
		var out []byte
		bytes := 0
		i := 0
		for b.Loop() {
			out = append(out[:0], blocks[i%agents]...)
			bytes += len(out)
			i++
		}
		b.ReportMetric(float64(bytes)/float64(b.N), "bytes/block")
	})
}

// BenchmarkWriterHeaderBlock encodes lease renewals' header blocks as a connection's writer does
// (writer.encode), for 1000 agents in turn: the shared fields through the connection's dynamic
// table, each agent's own as never-indexed literals.
func BenchmarkWriterHeaderBlock(b *testing.B) {
	const agents = 1000
	c := &Client{authority: "127.0.0.1:6443", clock: clock.RealClock{}, cfg: Config{Auth: func() ([]Field, error) {
		return []Field{{"authorization", "Bearer 0123456789abcdef0123456789abcdef"}}, nil
	}}}
	w := newWriter(&conn{client: c})
	header := []Field{
		{"accept", "application/vnd.kubernetes.protobuf,application/json"},
		{"user-agent", "kubelet/v1.37.2 (linux/amd64) fakelet"},
		{"content-type", "application/vnd.kubernetes.protobuf"},
	}
	paths := make([]string, agents)
	owns := make([][]Field, agents)
	for i := range agents {
		name := fmt.Sprintf("fakelet-%05d", i)
		paths[i] = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/" + name
		owns[i] = []Field{{"impersonate-user", "system:node:" + name}, {"impersonate-group", "system:nodes"}}
	}
	body := make([]byte, 263)
	bytes := 0
	i := 0
	for b.Loop() {
		// A new path string each time, as the fleet builds it for each request.
		req := Request{Method: "PUT", Path: paths[i%agents] + "?timeout=10s", Header: header, Own: owns[i%agents], Body: body}
		if err := w.encode(&req); err != nil {
			b.Fatal(err)
		}
		bytes += len(w.block.b)
		i++
	}
	b.ReportMetric(float64(bytes)/float64(b.N), "bytes/block")
}
