package fidelity

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
)

// Request is one request of the audit log, as far as the comparison needs it.
type Request struct {
	// Node is the node whose kubelet sent it (system:node:<Node>), or "" for any other user.
	Node string
	// Impersonated: the node's name came from impersonatedUser (a fakelet agent), not from the
	// authenticated user (a hollow kubelet's own certificate).
	Impersonated bool
	// UserAgent is the client's, to tell the fleet's own shared requests from anyone else's.
	UserAgent string
	Class     Class
	// At is when the apiserver received it.
	At time.Time
	// Code is the response's status code; 0 for a watch still open when the log was read.
	Code int
}

// auditEvent is the part of an audit.k8s.io/v1 Event that is read here.
type auditEvent struct {
	AuditID          string      `json:"auditID"`
	Stage            string      `json:"stage"`
	RequestURI       string      `json:"requestURI"`
	Verb             string      `json:"verb"`
	User             auditUser   `json:"user"`
	ImpersonatedUser *auditUser  `json:"impersonatedUser"`
	UserAgent        string      `json:"userAgent"`
	ObjectRef        *objectRef  `json:"objectRef"`
	ResponseStatus   *respStatus `json:"responseStatus"`
	RequestReceived  time.Time   `json:"requestReceivedTimestamp"`
}

type auditUser struct {
	Username string `json:"username"`
}

type objectRef struct {
	Resource    string `json:"resource"`
	APIGroup    string `json:"apiGroup"`
	Subresource string `json:"subresource"`
}

type respStatus struct {
	Code int `json:"code"`
}

// nodeUserPrefix is how the apiserver names a kubelet's user.
const nodeUserPrefix = "system:node:"

// ReadAudit reads an audit log, one JSON event a line, and returns each request once, in the order
// the log first shows it. A request logged at several stages (a watch at ResponseStarted and again at
// ResponseComplete) counts once; its code is the last one logged. A line that is not an event is an
// error naming it: a log cut short by a crash ends with a partial line, which is skipped.
func ReadAudit(r io.Reader) ([]Request, error) {
	var out []Request
	seen := map[string]int{} // auditID -> index in out
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	line := 0
	var pending error
	for sc.Scan() {
		line++
		if pending != nil {
			return nil, pending // a bad line followed by more: not a cut-off end
		}
		b := sc.Bytes()
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		var ev auditEvent
		if err := json.Unmarshal(b, &ev); err != nil {
			pending = fmt.Errorf("audit log line %d: %w", line, err)
			continue
		}
		if ev.AuditID == "" {
			return nil, fmt.Errorf("audit log line %d: not an audit event (no auditID)", line)
		}
		code := 0
		if ev.ResponseStatus != nil {
			code = ev.ResponseStatus.Code
		}
		if i, ok := seen[ev.AuditID]; ok {
			if code != 0 {
				out[i].Code = code
			}
			continue
		}
		seen[ev.AuditID] = len(out)
		out = append(out, ev.request(code))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	return out, nil
}

func (ev auditEvent) request(code int) Request {
	r := Request{UserAgent: ev.UserAgent, At: ev.RequestReceived, Code: code, Class: ev.class()}
	if ev.ImpersonatedUser != nil {
		if name, ok := strings.CutPrefix(ev.ImpersonatedUser.Username, nodeUserPrefix); ok {
			r.Node, r.Impersonated = name, true
		}
	} else if name, ok := strings.CutPrefix(ev.User.Username, nodeUserPrefix); ok {
		r.Node = name
	}
	return r
}

// class is the request's class: the audit verb, with a streaming list (a watch with
// sendInitialEvents=true, what v1.37 reflectors open instead of a LIST) told apart from a plain
// watch, and the resource and subresource; a request without an object (discovery, /healthz) is
// named by its path.
func (ev auditEvent) class() Class {
	c := Class{Verb: ev.Verb}
	u, err := url.Parse(ev.RequestURI)
	if ev.ObjectRef == nil {
		if err == nil {
			c.Resource = u.Path
		} else {
			c.Resource = ev.RequestURI
		}
		return c
	}
	c.Resource, c.Subresource = ev.ObjectRef.Resource, ev.ObjectRef.Subresource
	if ev.Verb == "watch" && err == nil && u.Query().Get("sendInitialEvents") == "true" {
		c.Verb = VerbWatchList
	}
	return c
}
