package standin

import (
	"context"
	"net/http"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// workers apply writes on goroutines that live as long as the server, whose stacks have grown to
// what a write takes. x/net's server runs each request on a goroutine of its own, which starts with
// the smallest stack: decoding a body, the store and encoding go deeper, and the runtime then copies
// the stack, frame by frame, at every request. A request's own goroutine still reads its body and
// writes its answer, which wait on the connection; a worker only computes. A write that finds no
// worker free is applied on its own goroutine, as before.
type workers struct {
	jobs chan *job
}

// apply is a write applied to a request's body: the object written and its status code.
type apply func(body []byte) (*entry, int, error)

// job is one write handed to a worker, and what the worker hands back.
type job struct {
	apply apply
	body  []byte
	e     *entry
	code  int
	err   error
	panic any // raised again on the request's goroutine, where x/net's server recovers it
	done  chan struct{}
}

// startWorkers starts n workers, which end with ctx.
func startWorkers(ctx context.Context, n int) *workers {
	ws := &workers{jobs: make(chan *job)}
	for range n {
		go ws.run(ctx)
	}
	return ws
}

func (ws *workers) run(ctx context.Context) {
	for {
		select {
		case j := <-ws.jobs:
			j.run()
			j.done <- struct{}{}
		case <-ctx.Done():
			return
		}
	}
}

func (j *job) run() {
	defer func() { j.panic = recover() }()
	j.e, j.code, j.err = j.apply(j.body)
}

// write reads a write's body, up to limit bytes, and applies it, on a free worker if there is one,
// and holds its answer for Options.WriteLatency.
func (s *Server) write(req *http.Request, limit int64, a apply) (*entry, int, error) {
	body, err := readBody(req, limit)
	if err != nil {
		return nil, 0, apierrors.NewBadRequest(err.Error())
	}
	defer s.hold(req)
	if s.workers == nil {
		return a(body)
	}
	j := jobs.Get().(*job)
	j.apply, j.body = a, body
	select {
	case s.workers.jobs <- j:
		<-j.done
	default:
		j.run()
	}
	e, code, err, p := j.e, j.code, j.err, j.panic
	*j = job{done: j.done}
	jobs.Put(j)
	if p != nil {
		panic(p)
	}
	return e, code, err
}

var jobs = sync.Pool{New: func() any { return &job{done: make(chan struct{}, 1)} }}
