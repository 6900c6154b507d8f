package wire

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	"golang.org/x/net/http2/hpack"
	"k8s.io/utils/clock"
)

// TestHeaderBlocksDecodeToTheirRequestsFields encodes requests as a connection's writer does and
// decodes every block in order with one decoder, as the server does: each decodes to exactly its
// request's fields, in order, the agents' never indexed. Between an agent's requests, others index
// a field of the same name (the name then has a dynamic index, which moves as the table fills) and
// the server shrinks the table: a writer that copied an agent's fields from an earlier block, as a
// cache of per-agent header blocks would, must not copy bytes that name a field by its place in
// the table, which would decode to another field, or not at all.
func TestHeaderBlocksDecodeToTheirRequestsFields(t *testing.T) {
	auth := []Field{{"authorization", "Bearer 0123456789abcdef"}}
	c := &Client{authority: "127.0.0.1:6443", clock: clock.RealClock{}, cfg: Config{Auth: func() ([]Field, error) { return auth, nil }}}
	w := newWriter(&conn{client: c})
	dec := hpack.NewDecoder(4096, nil)
	header := []Field{{"accept", "application/vnd.kubernetes.protobuf,application/json"}, {"content-type", "application/vnd.kubernetes.protobuf"}}
	renewal := func(i int) *Request {
		name := fmt.Sprintf("fakelet-%05d", i)
		return &Request{Method: "PUT", Path: "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/" + name + "?timeout=10s",
			Header: header, Own: []Field{{"impersonate-user", "system:node:" + name}, {"impersonate-group", "system:nodes"}}, Body: make([]byte, 263+i%2)}
	}
	// Another client's request, whose impersonation the table indexes.
	other := func(i int) *Request {
		return &Request{Path: "/api/v1/nodes?limit=" + strconv.Itoa(i), Header: []Field{{"accept", "application/json"}, {"impersonate-user", fmt.Sprintf("admin-%d", i)}}}
	}
	var seq []*Request
	for round := range 4 {
		for i := range 6 {
			seq = append(seq, renewal(i), other(round*6+i))
		}
	}
	for n, req := range seq {
		if n == len(seq)/2 {
			if err := w.write(&item{kind: itemTableSize, incr: 128}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.encode(req); err != nil {
			t.Fatal(err)
		}
		got, err := dec.DecodeFull(w.block.b)
		if err != nil {
			t.Fatalf("request %d (%s): %v", n, req.Path, err)
		}
		if want := fieldsOf(req, auth); !slices.Equal(got, want) {
			t.Errorf("request %d decodes to\n %v\nwant\n %v", n, got, want)
		}
	}
}

// fieldsOf is the header list a request's block must decode to: pseudo-headers, credentials (but
// an impersonation of the request's own), shared fields, the agent's never-indexed fields, its
// body's length and Accept-Encoding.
func fieldsOf(req *Request, auth []Field) []hpack.HeaderField {
	method := req.Method
	if method == "" {
		method = "GET"
	}
	out := []hpack.HeaderField{{Name: ":method", Value: method}, {Name: ":scheme", Value: "https"}, {Name: ":authority", Value: "127.0.0.1:6443"},
		{Name: ":path", Value: req.Path, Sensitive: true}}
	own := hasImpersonation(req.Header) || hasImpersonation(req.Own)
	for _, f := range auth {
		if !impersonates(f.Name) || !own {
			out = append(out, hpack.HeaderField{Name: f.Name, Value: f.Value})
		}
	}
	for _, f := range req.Header {
		out = append(out, hpack.HeaderField{Name: f.Name, Value: f.Value})
	}
	for _, f := range req.Own {
		out = append(out, hpack.HeaderField{Name: f.Name, Value: f.Value, Sensitive: true})
	}
	if len(req.Body) > 0 {
		out = append(out, hpack.HeaderField{Name: "content-length", Value: strconv.Itoa(len(req.Body)), Sensitive: true})
	}
	return append(out, hpack.HeaderField{Name: "accept-encoding", Value: "gzip"})
}
