package agent

import (
	"context"
	"reflect"
	"sync"
	"sync/atomic"
	"time"
)

// runContext is a run's context, which its loops' requests are sent in: a context.WithCancel of the
// context Start was given, with the agent as its identity (IdentityFrom), that keeps nothing of a
// context derived from it once that one is done. A context.WithCancel keeps its children in a map
// that never shrinks: the timeouts of a node's first requests grew one that the node then kept for
// its whole run. The context package registers a child of a runContext through its AfterFunc
// method instead, in a set that is dropped whenever it empties.
//
// context.Cause of a runContext itself is its parent's (the context package finds causes only in
// its own types); a context derived from it has its own cause, as with any parent.
type runContext struct {
	parent context.Context
	agent  *Agent
	// runs are the runs of parent, which end c when parent ends; nil for a parent that never ends,
	// or one whose end c awaits on its own (stopParent).
	runs       *parentRuns
	stopParent func() bool

	mu     sync.Mutex
	done   atomic.Value // chan struct{}, made by the first Done
	err    atomic.Pointer[error]
	afters map[*afterFunc]struct{} // nil while empty
}

type afterFunc struct{ f func() }

// closedDone is the Done of a runContext cancelled before anyone asked for it.
var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// parentRuns are the runs started in one context, which its end ends on one goroutine: with a
// context.AfterFunc each, the end of a fleet's context would start a goroutine for each of its
// 100,000 runs at once. (A context.WithCancel's children are ended by their parent's cancel itself,
// but only the context package's own types can be such children.)
type parentRuns struct {
	mu    sync.Mutex
	runs  map[*runContext]struct{}
	ended error
}

var runsByParent sync.Map // context.Context -> *parentRuns

// init makes c a context of parent for agent a's run; it ends when parent does, or at cancel.
func (c *runContext) init(parent context.Context, a *Agent) {
	c.parent, c.agent = parent, a
	if parent.Done() == nil {
		return // it never ends
	}
	if !reflect.TypeOf(parent).Comparable() {
		c.mu.Lock() // the parent's end may cancel c at once, on another goroutine
		defer c.mu.Unlock()
		c.stopParent = context.AfterFunc(parent, func() { c.cancel(parent.Err()) })
		return
	}
	v, loaded := runsByParent.LoadOrStore(parent, &parentRuns{})
	p := v.(*parentRuns)
	if !loaded {
		context.AfterFunc(parent, func() { p.end(parent) })
	}
	p.mu.Lock()
	if err := p.ended; err != nil {
		p.mu.Unlock()
		c.cancel(err)
		return
	}
	if p.runs == nil {
		p.runs = map[*runContext]struct{}{}
	}
	c.runs = p // before end can see c, which then reads it
	p.runs[c] = struct{}{}
	p.mu.Unlock()
}

// end ends every run of parent, which has ended.
func (p *parentRuns) end(parent context.Context) {
	runsByParent.Delete(parent)
	p.mu.Lock()
	p.ended = parent.Err()
	runs := p.runs
	p.runs = nil
	p.mu.Unlock()
	for c := range runs {
		c.cancel(p.ended)
	}
}

func (p *parentRuns) forget(c *runContext) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.runs, c)
}

// cancel ends c with err, and every context derived from it.
func (c *runContext) cancel(err error) {
	c.mu.Lock()
	if c.err.Load() != nil {
		c.mu.Unlock()
		return
	}
	c.err.Store(&err)
	if d, _ := c.done.Load().(chan struct{}); d != nil {
		close(d)
	} else {
		c.done.Store(closedDone)
	}
	afters, stopParent := c.afters, c.stopParent
	c.afters = nil
	c.mu.Unlock()
	if stopParent != nil {
		stopParent()
	}
	if c.runs != nil {
		c.runs.forget(c)
	}
	for f := range afters {
		f.f()
	}
}

func (c *runContext) Deadline() (time.Time, bool) { return c.parent.Deadline() }

func (c *runContext) Done() <-chan struct{} {
	if d, _ := c.done.Load().(chan struct{}); d != nil {
		return d
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	d, _ := c.done.Load().(chan struct{})
	if d == nil {
		d = make(chan struct{})
		c.done.Store(d)
	}
	return d
}

func (c *runContext) Err() error {
	if err := c.err.Load(); err != nil {
		return *err
	}
	return nil
}

func (c *runContext) Value(key any) any {
	if _, ok := key.(identityKey); ok {
		return c.agent
	}
	return c.parent.Value(key)
}

// AfterFunc runs f when c ends, unless stop is called first (it then reports true), as
// context.AfterFunc's stop does. The context package calls it to cancel a context derived from c;
// f is that cancellation, run on the goroutine that ends c, or on its own if c has ended already.
func (c *runContext) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err.Load() != nil {
		go f()
		return func() bool { return false }
	}
	af := &afterFunc{f: f}
	if c.afters == nil {
		c.afters = map[*afterFunc]struct{}{}
	}
	c.afters[af] = struct{}{}
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if _, ok := c.afters[af]; !ok {
			return false
		}
		delete(c.afters, af)
		if len(c.afters) == 0 {
			c.afters = nil // a map never shrinks: a new one when needed again
		}
		return true
	}
}

// callContext is a loop's request context: the run's, with the loop's Meter (MeterFrom). Being a
// runContext's AfterFunc too, it lets the context package register a context derived from it with
// the run's, not with a goroutine of its own.
type callContext struct {
	run   *runContext
	meter *Meter
}

func (c *callContext) Deadline() (time.Time, bool)    { return c.run.Deadline() }
func (c *callContext) Done() <-chan struct{}          { return c.run.Done() }
func (c *callContext) Err() error                     { return c.run.Err() }
func (c *callContext) AfterFunc(f func()) func() bool { return c.run.AfterFunc(f) }

func (c *callContext) Value(key any) any {
	if _, ok := key.(meterKey); ok {
		return c.meter
	}
	return c.run.Value(key)
}
