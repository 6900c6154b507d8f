package standin

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// requestCounts is the stand-in's apiserver_request_total: what it answered by verb, resource,
// subresource and code, so that a bench reads it where it reads an apiserver's.
type requestCounts struct {
	mu sync.Mutex
	n  map[countKey]uint64
	// watches is the watches open now, the apiserver's apiserver_longrunning_requests{verb="WATCH"}.
	watches atomic.Int64
}

type countKey struct {
	verb, resource, subresource string
	code                        int
}

func (c *requestCounts) add(verb, resource, subresource string, code int) {
	c.mu.Lock()
	if c.n == nil {
		c.n = map[countKey]uint64{}
	}
	c.n[countKey{verb, resource, subresource, code}]++
	c.mu.Unlock()
}

// write writes the counts in Prometheus' text format.
func (c *requestCounts) write(w io.Writer) {
	c.mu.Lock()
	lines := make([]string, 0, len(c.n))
	for k, v := range c.n {
		lines = append(lines, fmt.Sprintf("apiserver_request_total{code=%q,resource=%q,subresource=%q,verb=%q} %d\n",
			fmt.Sprint(k.code), k.resource, k.subresource, k.verb, v))
	}
	c.mu.Unlock()
	slices.Sort(lines)
	fmt.Fprint(w, "# HELP apiserver_request_total Requests the fakelet stand-in answered.\n# TYPE apiserver_request_total counter\n")
	fmt.Fprint(w, strings.Join(lines, ""))
	fmt.Fprintf(w, "# HELP apiserver_longrunning_requests Watches the fakelet stand-in serves.\n# TYPE apiserver_longrunning_requests gauge\napiserver_longrunning_requests{verb=\"WATCH\"} %d\n", c.watches.Load())
}
