package scenario

import (
	"context"
	"sync"

	"fakelet.dev/fakelet/profiles"
)

// adminWorkers is how many ops that call the apiserver (deleteLease, remove) run at once. Each is two
// to four calls of the fleet's admin client, which is rate limited anyway (200 QPS); the workers are
// scheduler tasks, so a fake clock sees them as the agents' work.
const adminWorkers = 16

// adminQueue holds the ops that call the apiserver, first in first out, for up to adminWorkers tasks.
type adminQueue struct {
	r      *Runner
	mu     sync.Mutex
	ops    []profiles.Event
	active int
}

func (q *adminQueue) push(ev profiles.Event) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.ops = append(q.ops, ev)
	if q.active < adminWorkers {
		q.active++
		q.r.sched.After(0, adminTask{q})
	}
}

func (q *adminQueue) idle() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.active == 0 && len(q.ops) == 0
}

func (q *adminQueue) pop() (profiles.Event, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.ops) == 0 {
		q.active--
		q.ops = nil
		return profiles.Event{}, false
	}
	ev := q.ops[0]
	q.ops = q.ops[1:]
	return ev, true
}

// adminTask applies queued ops until the queue is empty.
type adminTask struct{ q *adminQueue }

func (t adminTask) Run() {
	r := t.q.r
	for {
		ev, ok := t.q.pop()
		if !ok {
			r.adminDone()
			return
		}
		err := r.applyAdmin(r.ctx, ev)
		if r.ctx.Err() != nil {
			continue // the run ended: the op did not happen, or we cannot tell
		}
		r.record(ev, err)
	}
}

func (r *Runner) applyAdmin(ctx context.Context, ev profiles.Event) error {
	if ev.Op == profiles.OpRemove {
		return r.fleet.RemoveNodes(ctx, []int{ev.Node})
	}
	return r.fleet.DeleteLease(ctx, ev.Node)
}

// adminDone ends the run if the last phase ended and no apiserver op is left.
func (r *Runner) adminDone() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended && r.admin.idle() {
		r.once.Do(func() { close(r.done) })
	}
}
