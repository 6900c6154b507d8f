package scenario

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"fakelet.dev/fakelet/internal/scheduler"
)

// removeTimeout bounds the deletion of a run's workloads, which also runs after a signal.
const removeTimeout = time.Minute

// workloadSet creates a profile's workloads, one object at a time at the profile's rate from the
// first phase's start, and deletes what it created at the end: each object conditional on the UID its
// creation returned, the namespace last. Creation is one chain of scheduler tasks, so a fake clock
// paces it as it paces the agents.
type workloadSet struct {
	client  kubernetes.Interface
	sched   *scheduler.Scheduler
	objects workloadObjects
	list    []workloadObject
	rate    float64
	logf    func(format string, args ...any)

	mu       sync.Mutex
	start    time.Time
	next     int         // the next object of list to create
	created  []createdAt // what was created, in order
	failed   int
	firstErr error
	stopped  bool // the run ended: create nothing more
	inFlight bool // a creation is on its way to the apiserver
	removed  bool
	finished chan struct{} // closed when the chain ends (all created, a failure, or stopped)
}

// createdAt is an object the run created, with the UID the apiserver gave it.
type createdAt struct {
	obj workloadObject
	uid types.UID
	at  time.Time
}

// begin starts creating the objects at start.
func (ws *workloadSet) begin(ctx context.Context, start time.Time) {
	ws.mu.Lock()
	ws.start = start
	ws.finished = make(chan struct{})
	ws.mu.Unlock()
	ws.logf("%s workloads: creating %d objects in namespace %s at %g/s", offset(0), len(ws.list), ws.objects.namespace, ws.rate)
	ws.sched.At(start, createTask{ws, ctx})
}

type createTask struct {
	ws  *workloadSet
	ctx context.Context
}

func (t createTask) Run() { t.ws.createNext(t.ctx) }

// createNext creates the next object and schedules the one after it at its time.
func (ws *workloadSet) createNext(ctx context.Context) {
	ws.mu.Lock()
	if ws.stopped || ws.next >= len(ws.list) || ctx.Err() != nil {
		ws.endChain()
		ws.mu.Unlock()
		return
	}
	obj := ws.list[ws.next]
	ws.next++
	ws.inFlight = true
	ws.mu.Unlock()

	uid, err := ws.create(ctx, obj)
	now := ws.sched.Clock().Now()

	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.inFlight = false
	if err == nil {
		ws.created = append(ws.created, createdAt{obj: obj, uid: uid, at: now})
	}
	if ws.stopped {
		ws.endChain()
		return
	}
	if err != nil {
		ws.failed++
		if ws.firstErr == nil {
			ws.firstErr = err
		}
		ws.logf("%s workloads: %v", offset(now.Sub(ws.start).Round(time.Millisecond)), err)
		if obj.kind == "Namespace" {
			ws.endChain() // nothing else can be created
			return
		}
	}
	if ws.next >= len(ws.list) {
		ws.logf("%s workloads: %d of %d objects created", offset(now.Sub(ws.start).Round(time.Millisecond)), len(ws.created), len(ws.list))
		ws.endChain()
		return
	}
	ws.sched.At(ws.start.Add(time.Duration(float64(ws.next)/ws.rate*float64(time.Second))), createTask{ws, ctx})
}

// endChain marks the creation over. ws.mu must be held.
func (ws *workloadSet) endChain() {
	select {
	case <-ws.finished:
	default:
		close(ws.finished)
	}
}

func (ws *workloadSet) create(ctx context.Context, obj workloadObject) (types.UID, error) {
	o, ns := ws.objects, ws.objects.namespace
	c := ws.client
	opts := metav1.CreateOptions{}
	var (
		m   metav1.Object
		err error
	)
	switch obj.kind {
	case "Namespace":
		m, err = c.CoreV1().Namespaces().Create(ctx, o.namespaceObject(), opts)
	case "Deployment":
		m, err = c.AppsV1().Deployments(ns).Create(ctx, o.deployment(obj.w, obj.name, obj.pods), opts)
	case "Service":
		m, err = c.CoreV1().Services(ns).Create(ctx, o.service(obj.name), opts)
	case "Job":
		m, err = c.BatchV1().Jobs(ns).Create(ctx, o.job(obj.w, obj.name, obj.pods), opts)
	case "DaemonSet":
		m, err = c.AppsV1().DaemonSets(ns).Create(ctx, o.daemonSet(obj.w, obj.name), opts)
	default:
		return "", fmt.Errorf("create %v: unknown kind", obj)
	}
	if err != nil {
		return "", fmt.Errorf("create %v: %w", obj, err)
	}
	return m.GetUID(), nil
}

// remove stops the creation and deletes every object created, last created first, each with a
// precondition on its UID (an object of that name someone else made since is left alone), the
// workloads' pods with them (background propagation), the namespace last. It runs once.
func (ws *workloadSet) remove(ctx context.Context) error {
	ws.mu.Lock()
	ws.stopped = true
	finished := ws.finished
	if finished != nil && !ws.inFlight {
		ws.endChain() // the next creation, if one is scheduled, will find the run stopped
	}
	ws.mu.Unlock()
	if finished != nil {
		<-finished // a creation in flight returns before its object is deleted
	}
	ws.mu.Lock()
	if ws.removed {
		ws.mu.Unlock()
		return nil
	}
	ws.removed = true
	created := ws.created
	ws.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, removeTimeout)
	defer cancel()
	var errs []error
	for i := len(created) - 1; i >= 0; i-- {
		if err := ws.delete(ctx, created[i]); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete %v: %w", created[i].obj, err))
		}
	}
	if len(created) > 0 {
		ws.logf("workloads: deleted the %d objects the run created in namespace %s", len(created)-len(errs), ws.objects.namespace)
	}
	return errors.Join(errs...)
}

func (ws *workloadSet) delete(ctx context.Context, c createdAt) error {
	uid := c.uid
	background := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &background}
	ns := ws.objects.namespace
	switch c.obj.kind {
	case "Namespace":
		return ws.client.CoreV1().Namespaces().Delete(ctx, c.obj.name, opts)
	case "Deployment":
		return ws.client.AppsV1().Deployments(ns).Delete(ctx, c.obj.name, opts)
	case "Service":
		return ws.client.CoreV1().Services(ns).Delete(ctx, c.obj.name, opts)
	case "Job":
		return ws.client.BatchV1().Jobs(ns).Delete(ctx, c.obj.name, opts)
	case "DaemonSet":
		return ws.client.AppsV1().DaemonSets(ns).Delete(ctx, c.obj.name, opts)
	}
	return fmt.Errorf("unknown kind %s", c.obj.kind)
}

// WorkloadRecord is what the run created of its workloads.
type WorkloadRecord struct {
	Namespace string `json:"namespace"`
	// Objects is how many objects the profile asks for (the namespace included), Created how many
	// were created, Failed how many creations failed (FirstError the first's).
	Objects    int    `json:"objects"`
	Created    int    `json:"created"`
	Failed     int    `json:"failed,omitempty"`
	FirstError string `json:"firstError,omitempty"`
	// Last is when the last object was created.
	Last time.Time `json:"last,omitempty"`
}

func (ws *workloadSet) record() WorkloadRecord {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	r := WorkloadRecord{Namespace: ws.objects.namespace, Objects: len(ws.list), Created: len(ws.created), Failed: ws.failed}
	if ws.firstErr != nil {
		r.FirstError = ws.firstErr.Error()
	}
	if n := len(ws.created); n > 0 {
		r.Last = ws.created[n-1].at
	}
	return r
}
