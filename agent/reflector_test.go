package agent

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// fakeWatcher records the watches agents open; a test plays the server through their handlers.
type fakeWatcher struct {
	h  *harness
	mu sync.Mutex
	ws []*fakeWatch
}

type fakeWatch struct {
	at  time.Duration
	ctx context.Context
	req WatchRequest
	h   WatchHandler
}

func (w *fakeWatcher) Watch(ctx context.Context, req WatchRequest, h WatchHandler) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ws = append(w.ws, &fakeWatch{at: w.h.clock.Now().Sub(t0), ctx: ctx, req: req, h: h})
}

// take returns the watches opened since the last take.
func (w *fakeWatcher) take() []*fakeWatch {
	w.mu.Lock()
	defer w.mu.Unlock()
	ws := w.ws
	w.ws = nil
	return ws
}

// kubeletAgent starts an agent of the kubelet footprint whose watches go to the returned watcher.
func kubeletAgent(t *testing.T) (*harness, *Agent, *fakeWatcher) {
	h := newHarness(t, func(c *Config) { c.Footprint = FootprintKubelet })
	w := &fakeWatcher{h: h}
	a := New(h.cfg, Clients{Core: h.client.CoreV1(), Coordination: h.client.CoordinationV1(), Watches: w}, "fakelet-00007", 7, "")
	return h, a, w
}

func TestKubeletWatchesAtStart(t *testing.T) {
	h, a, w := kubeletAgent(t)
	a.Start(h.ctx)
	h.advance(0)
	// rand 0.5: every timeout is 450 s, in the reflector's [300, 600). The queries are those a hollow
	// kubelet (kubemark, the real kubelet code) sent in the kubemark reference's audit log.
	want := []string{
		"/api/v1/nodes?allowWatchBookmarks=true&fieldSelector=metadata.name%3Dfakelet-00007&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeout=7m30s&timeoutSeconds=450&watch=true",
		"/api/v1/services?allowWatchBookmarks=true&fieldSelector=spec.clusterIP%21%3DNone&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeout=7m30s&timeoutSeconds=450&watch=true",
		"/api/v1/pods?allowWatchBookmarks=true&fieldSelector=spec.nodeName%3Dfakelet-00007&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeoutSeconds=450&watch=true",
		"/apis/node.k8s.io/v1/runtimeclasses?allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeout=7m30s&timeoutSeconds=450&watch=true",
		"/apis/storage.k8s.io/v1/csidrivers?allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeout=7m30s&timeoutSeconds=450&watch=true",
		"/apis/certificates.k8s.io/v1/podcertificaterequests?allowWatchBookmarks=true&fieldSelector=spec.nodeName%3Dfakelet-00007&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeout=7m30s&timeoutSeconds=450&watch=true",
	}
	got := map[string]bool{}
	for _, fw := range w.take() {
		got[fw.req.String()] = true
		if user, groups, ok := IdentityFrom(fw.ctx); !ok || user != "system:node:fakelet-00007" || len(groups) != 1 || groups[0] != NodesGroup {
			t.Errorf("watch %s is sent as %q %v, want the node's identity", fw.req, user, groups)
		}
	}
	for _, q := range want {
		if !got[q] {
			t.Errorf("no watch %s\nopened: %v", q, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("opened %d watches, want %d: %v", len(got), len(want), got)
	}

	// The heartbeat footprint opens none.
	h2 := newHarness(t)
	w2 := &fakeWatcher{h: h2}
	b := New(h2.cfg, Clients{Core: h2.client.CoreV1(), Coordination: h2.client.CoordinationV1(), Watches: w2}, "fakelet-00008", 8, "")
	b.Start(h2.ctx)
	h2.advance(time.Second)
	if ws := w2.take(); len(ws) != 0 {
		t.Errorf("the heartbeat footprint opened %d watches", len(ws))
	}
}

// podsWatch starts a kubelet agent and returns its pods watch, not yet answered.
func podsWatch(t *testing.T) (*harness, *fakeWatcher, *fakeWatch) {
	h, a, w := kubeletAgent(t)
	a.Start(h.ctx)
	h.advance(0)
	for _, fw := range w.take() {
		if fw.req.Resource == "pods" {
			return h, w, fw
		}
	}
	t.Fatal("no pods watch")
	return nil, nil, nil
}

func only(t *testing.T, w *fakeWatcher) *fakeWatch {
	t.Helper()
	ws := w.take()
	if len(ws) != 1 {
		t.Fatalf("got %d watches, want 1: %v", len(ws), ws)
	}
	return ws[0]
}

func gone() error {
	return apierrors.NewResourceExpired("too old resource version: 12 (40)")
}

func TestReflectorResumesAndRelists(t *testing.T) {
	h, w, fw := podsWatch(t)
	fw.h.Opened(nil)
	// The initial objects come in no order: only the bookmark that ends them sets the version.
	fw.h.Event(WatchEvent{Type: EventAdded, ResourceVersion: "9"})
	fw.h.Event(WatchEvent{Type: EventAdded, ResourceVersion: "5"})
	fw.h.Event(WatchEvent{Type: EventBookmark, ResourceVersion: "10", InitialEventsEnd: true})
	fw.h.Event(WatchEvent{Type: EventModified, ResourceVersion: "11"})
	h.advance(450 * time.Second)
	fw.h.Ended(nil) // the server's timeout
	h.advance(450 * time.Second)

	// The watch goes on from the last version, at once, with no initial events.
	fw = only(t, w)
	if fw.at != 450*time.Second {
		t.Errorf("re-watch at %v, want at once (450s)", fw.at)
	}
	if got, want := fw.req.String(), "/api/v1/pods?allowWatchBookmarks=true&fieldSelector=spec.nodeName%3Dfakelet-00007&resourceVersion=11&timeoutSeconds=450&watch=true"; got != want {
		t.Errorf("re-watch:\n got %s\nwant %s", got, want)
	}
	fw.h.Opened(nil)
	fw.h.Event(WatchEvent{Type: EventBookmark, ResourceVersion: "12"})
	fw.h.Ended(gone())

	// 410 in the stream: ListAndWatch returns, and the loop lists again after its backoff, 0.8 s
	// plus full jitter (rand 0.5: 1.2 s), from the last version.
	h.advance(450*time.Second + 1199*time.Millisecond)
	if ws := w.take(); len(ws) != 0 {
		t.Fatalf("relisted before the backoff: %v", ws[0].req)
	}
	h.advance(450*time.Second + 1200*time.Millisecond)
	fw = only(t, w)
	if got, want := fw.req.String(), "/api/v1/pods?allowWatchBookmarks=true&fieldSelector=spec.nodeName%3Dfakelet-00007&resourceVersion=12&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeoutSeconds=450&watch=true"; got != want {
		t.Errorf("relist:\n got %s\nwant %s", got, want)
	}
	// That version is gone too: the newest state, at once.
	fw.h.Opened(gone())
	h.advance(450*time.Second + 1200*time.Millisecond)
	fw = only(t, w)
	if got, want := fw.req.String(), "/api/v1/pods?allowWatchBookmarks=true&fieldSelector=spec.nodeName%3Dfakelet-00007&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeoutSeconds=450&watch=true"; got != want {
		t.Errorf("relist from the newest:\n got %s\nwant %s", got, want)
	}
	fw.h.Opened(nil)
	fw.h.Event(WatchEvent{Type: EventBookmark, ResourceVersion: "40", InitialEventsEnd: true})

	// A broken connection: list again after the next backoff step, 1.6 s x 1.5.
	fw.h.Ended(errors.New("unexpected EOF"))
	h.advance(450*time.Second + 1200*time.Millisecond + 2399*time.Millisecond)
	if ws := w.take(); len(ws) != 0 {
		t.Fatalf("relisted before the backoff: %v", ws[0].req)
	}
	h.advance(450*time.Second + 1200*time.Millisecond + 2400*time.Millisecond)
	fw = only(t, w)
	if got := fw.req.Query.Get("resourceVersion"); got != "40" || fw.req.Query.Get("sendInitialEvents") != "true" {
		t.Errorf("relist after a broken stream: %s, want a streaming list from 40", fw.req)
	}
}

func TestReflectorBacksOffOnRefusedWatch(t *testing.T) {
	h, w, fw := podsWatch(t)
	// A refused connection and 429 are retried, the same request, after backoffs 0.8, 1.6, 3.2 s
	// (each x1.5 with rand 0.5); the backoff restarts two minutes after it began.
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	tooMany := apierrors.NewTooManyRequests("slow down", 1)
	at := time.Duration(0)
	for i, err := range []error{refused, tooMany, refused} {
		fw.h.Opened(err)
		at += time.Duration(float64(backoffInit<<i) * 1.5)
		h.advance(at - time.Millisecond)
		if ws := w.take(); len(ws) != 0 {
			t.Fatalf("try %d: retried at %v, before its backoff %v", i, ws[0].at, at)
		}
		h.advance(at)
		next := only(t, w)
		if next.req.String() != fw.req.String() {
			t.Errorf("try %d: retried %s, want the same %s", i, next.req, fw.req)
		}
		fw = next
	}
	h.advance(at + backoffReset)
	fw.h.Opened(refused)
	at += backoffReset + time.Duration(float64(backoffInit)*1.5)
	h.advance(at)
	if ws := w.take(); len(ws) != 1 {
		t.Errorf("after two quiet minutes the backoff did not restart at 0.8 s: %d watches", len(ws))
	}
}

func TestReflectorStopsWithTheRun(t *testing.T) {
	h, a, w := kubeletAgent(t)
	a.Start(h.ctx)
	h.advance(0)
	ws := w.take()
	a.Stop()
	for _, fw := range ws {
		if fw.ctx.Err() == nil {
			t.Fatalf("watch %s outlives the stopped kubelet", fw.req)
		}
		fw.h.Ended(context.Canceled)
	}
	h.advance(time.Minute)
	if ws := w.take(); len(ws) != 0 {
		t.Errorf("a stopped kubelet opened %d watches", len(ws))
	}
	// A restart is a new kubelet: streaming lists from the newest state.
	a.Start(h.ctx)
	h.advance(time.Minute)
	ws = w.take()
	if len(ws) != 6 {
		t.Fatalf("restart opened %d watches, want 6", len(ws))
	}
	for _, fw := range ws {
		if fw.req.Query.Has("resourceVersion") || fw.req.Query.Get("sendInitialEvents") != "true" {
			t.Errorf("restart: %s, want a streaming list from the newest state", fw.req)
		}
	}
}
