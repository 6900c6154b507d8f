package standin

import (
	"bytes"
	"encoding/json"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// heartbeatShortcut lets a kubelet's heartbeat patch skip the strategic merge; tests turn it off to
// hold the two to the same answers.
var heartbeatShortcut = true

// heartbeat applies a kubelet's periodic node status patch to node, the stored Node's own decoded
// copy, as the strategic merge does, without its three rounds of JSON: a uid precondition and new
// lastHeartbeatTimes of conditions the Node has, listed in the order it has them (what
// nodeutil.PatchNodeStatus sends when nothing else changed, every node's most frequent patch). ok
// is false, node untouched, for any other patch, which then takes the strategic merge.
func heartbeat(body []byte, node *corev1.Node) (ok bool) {
	p, ok := parseHeartbeat(body)
	if !ok || p.hasStatus && (len(p.beats) == 0 || !sameOrder(p.order, node.Status.Conditions)) {
		return false
	}
	at := make([]time.Time, len(p.beats))
	index := make([]int, len(p.beats))
	for i, b := range p.beats {
		if index[i] = conditionIndex(node.Status.Conditions, b.typ); index[i] < 0 {
			return false
		}
		for _, other := range p.beats[:i] {
			if other.typ == b.typ {
				return false
			}
		}
		// As metav1.Time decodes it from JSON.
		t, err := time.Parse(time.RFC3339, b.time)
		if err != nil {
			return false
		}
		at[i] = t.Local()
	}
	if p.hasUID {
		node.UID = types.UID(p.uid)
	}
	for i := range p.beats {
		node.Status.Conditions[index[i]].LastHeartbeatTime.Time = at[i]
	}
	return true
}

// heartbeatPatch is what parseHeartbeat reads of a patch.
type heartbeatPatch struct {
	uid               string
	hasUID, hasStatus bool
	order             []string // $setElementOrder/conditions
	beats             []beat
}

type beat struct{ typ, time string }

// parseHeartbeat reads {"metadata":{"uid":U},"status":{"$setElementOrder/conditions":[{"type":T},
// ...],"conditions":[{"lastHeartbeatTime":H,"type":T},...]}}, either part optional, keys in any
// order, each once, every value a string; ok is false for anything else.
func parseHeartbeat(body []byte) (p heartbeatPatch, ok bool) {
	d := json.NewDecoder(bytes.NewReader(body))
	ok = object(d, func(key string) bool {
		switch key {
		case "metadata":
			return !p.hasUID && object(d, func(key string) bool {
				if key != "uid" || p.hasUID {
					return false
				}
				p.hasUID = true
				p.uid, ok = str(d)
				return ok
			}) && p.hasUID
		case "status":
			if p.hasStatus {
				return false
			}
			p.hasStatus = true
			var order, conditions bool
			return object(d, func(key string) bool {
				switch {
				case key == "$setElementOrder/conditions" && !order:
					order = true
					return array(d, func() bool {
						var typ string
						ok := object(d, func(key string) bool {
							if key != "type" || typ != "" {
								return false
							}
							typ, ok = str(d)
							return ok && typ != ""
						})
						p.order = append(p.order, typ)
						return ok && typ != ""
					})
				case key == "conditions" && !conditions:
					conditions = true
					return array(d, func() bool {
						var b beat
						var hasTime bool
						ok := object(d, func(key string) bool {
							switch {
							case key == "type" && b.typ == "":
								b.typ, ok = str(d)
								return ok && b.typ != ""
							case key == "lastHeartbeatTime" && !hasTime:
								hasTime = true
								b.time, ok = str(d)
								return ok
							}
							return false
						})
						p.beats = append(p.beats, b)
						return ok && b.typ != "" && hasTime
					})
				}
				return false
			}) && order && conditions
		}
		return false
	})
	if _, err := d.Token(); !ok || err != io.EOF {
		return p, false
	}
	return p, true
}

// object reads a JSON object, handing each key to member, which reads its value.
func object(d *json.Decoder, member func(key string) bool) bool {
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	for d.More() {
		t, err := d.Token()
		key, isKey := t.(string)
		if err != nil || !isKey || !member(key) {
			return false
		}
	}
	t, err := d.Token()
	return err == nil && t == json.Delim('}')
}

// array reads a JSON array, element reading each element.
func array(d *json.Decoder, element func() bool) bool {
	if t, err := d.Token(); err != nil || t != json.Delim('[') {
		return false
	}
	for d.More() {
		if !element() {
			return false
		}
	}
	t, err := d.Token()
	return err == nil && t == json.Delim(']')
}

func str(d *json.Decoder) (string, bool) {
	t, err := d.Token()
	s, ok := t.(string)
	return s, err == nil && ok
}

// sameOrder says whether order lists conds' types as they are, each once.
func sameOrder(order []string, conds []corev1.NodeCondition) bool {
	if len(order) != len(conds) {
		return false
	}
	for i, typ := range order {
		if string(conds[i].Type) != typ || conditionIndex(conds, typ) != i {
			return false
		}
	}
	return true
}

func conditionIndex(conds []corev1.NodeCondition, typ string) int {
	for i := range conds {
		if string(conds[i].Type) == typ {
			return i
		}
	}
	return -1
}
