package agent

import (
	"bytes"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// heartbeatPatch is what nodeutil.PatchNodeStatus sends for new against old when new is old with its
// status recomputed and nothing in it changed but the conditions' heartbeat times: the periodic
// report, every 5 minutes per node in lease mode and every 10 s in status mode. Written directly it
// costs a few allocations instead of two JSON encodings of the Node and a two-way strategic merge
// patch (TestHeartbeatPatchMatchesPatchNodeStatus holds the two to the same bytes). ok is false when
// the conditions differ otherwise, and the caller must take PatchNodeStatus's way. A uid is the
// precondition withUID adds (empty: none).
func heartbeatPatch(old, new []corev1.NodeCondition, uid types.UID) (patch []byte, ok bool) {
	if len(old) != len(new) || !jsonSafe(string(uid)) {
		return nil, false
	}
	var moved [len(conditionTypes) * 2]int // indexes of conditions whose heartbeat time changed
	changed := moved[:0]
	var ob, nb [len(`"2006-01-02T15:04:05Z"`)]byte
	for i := range new {
		o, n := &old[i], &new[i]
		if o.Type != n.Type || o.Status != n.Status || o.Reason != n.Reason || o.Message != n.Message ||
			!o.LastTransitionTime.Equal(&n.LastTransitionTime) || !jsonSafe(string(n.Type)) {
			return nil, false
		}
		// Compare as JSON has them: to the second, in UTC, null for zero.
		if !bytes.Equal(appendTime(ob[:0], o.LastHeartbeatTime), appendTime(nb[:0], n.LastHeartbeatTime)) {
			changed = append(changed, i)
		}
	}
	b := make([]byte, 0, 64+len(uid)+len(new)*24+len(changed)*64)
	b = append(b, '{')
	if uid != "" {
		b = append(b, `"metadata":{"uid":"`...)
		b = append(b, uid...)
		b = append(b, `"}`...)
		if len(changed) > 0 {
			b = append(b, ',')
		}
	}
	if len(changed) == 0 {
		return append(b, '}'), true
	}
	b = append(b, `"status":{"$setElementOrder/conditions":[`...)
	for i := range new {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"`...)
		b = append(b, new[i].Type...)
		b = append(b, `"}`...)
	}
	b = append(b, `],"conditions":[`...)
	for j, i := range changed {
		if j > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"lastHeartbeatTime":`...)
		b = appendTime(b, new[i].LastHeartbeatTime)
		b = append(b, `,"type":"`...)
		b = append(b, new[i].Type...)
		b = append(b, `"}`...)
	}
	return append(b, `]}}`...), true
}

// appendTime appends t as metav1.Time marshals it to JSON.
func appendTime(b []byte, t metav1.Time) []byte {
	if t.IsZero() {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, "2006-01-02T15:04:05Z07:00")
	return append(b, '"')
}

// jsonSafe reports whether s is written to JSON as it is: no quote, backslash, control or non-ASCII
// character (or <, > and &, which encoding/json escapes).
func jsonSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// withUID returns old and new as PatchNodeStatus must see them for its patch to carry uid as
// metadata.uid: old without a UID, new with it. The apiserver validates the patched Node's UID as
// immutable, so a patch carrying the UID of the Node the agent registered fails (422) against any
// other Node of its name: a Node someone else created in its place is never written to. The kubelet
// sends no UID; this is the one difference in its status patches. An empty uid leaves both as they are.
func withUID(old, new *corev1.Node, uid types.UID) (*corev1.Node, *corev1.Node) {
	if uid == "" {
		return old, new
	}
	o, n := *old, *new
	o.UID, n.UID = "", uid
	return &o, &n
}

// patchHeartbeat sends the periodic status report as PatchNodeStatus would (the same patch, the same
// request, the same error), written by heartbeatPatch; see patchNodeStatus for any other change.
func (c *caller) patchHeartbeat(patch []byte) (out *corev1.Node, err error) {
	err = c.call("patch", "nodes", func(ctx context.Context) error {
		out, err = c.r.a.api.Core.Nodes().Patch(ctx, c.r.a.name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		if err != nil {
			err = fmt.Errorf("failed to patch status %q for node %q: %v", patch, c.r.a.name, err)
		}
		return err
	})
	return out, err
}
