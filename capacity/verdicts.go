package capacity

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"fakelet.dev/fakelet/internal/lockstep"
)

// Verdicts is where the shards of a sharded run exchange what each measured of each step.
type Verdicts interface {
	// Publish posts this shard's measure of the step of nodes, for the others to read until keep.
	Publish(ctx context.Context, nodes int, m Measured, keep time.Time) error
	// Read returns the measures of the step of nodes posted so far, by shard index.
	Read(ctx context.Context, nodes int) (map[int]Measured, error)
}

// BoardVerdicts are Verdicts posted on a lockstep.Board, one Lease per shard and step.
type BoardVerdicts struct{ Board *lockstep.Board }

// Publish implements Verdicts.
func (v BoardVerdicts) Publish(ctx context.Context, nodes int, m Measured, keep time.Time) error {
	b, err := json.Marshal(verdictOf(m))
	if err != nil {
		return err
	}
	return v.Board.Post(ctx, strconv.Itoa(nodes), b, keep)
}

// Read implements Verdicts.
func (v BoardVerdicts) Read(ctx context.Context, nodes int) (map[int]Measured, error) {
	posts, err := v.Board.Read(ctx, strconv.Itoa(nodes))
	if err != nil {
		return nil, err
	}
	out := make(map[int]Measured, len(posts))
	for i, p := range posts {
		var vd verdict
		if err := json.Unmarshal(p, &vd); err != nil {
			return nil, fmt.Errorf("shard %d's verdict on the step of %d nodes: %w", i, nodes, err)
		}
		out[i] = vd.measured()
	}
	return out, nil
}

// verdict is a Measured as a post holds it: JSON has no NaN (the mutating p99 of a hold without a
// mutating call) nor infinity.
type verdict struct {
	FalseAlarms      int   `json:"falseAlarms"`
	MutatingP99      float `json:"mutatingP99"`
	APFRejections    float `json:"apfRejections"`
	RenewalP99       float `json:"renewalP99"`
	FailedHeartbeats int64 `json:"failedHeartbeats"`
}

func verdictOf(m Measured) verdict {
	return verdict{m.FalseAlarms, float(m.MutatingP99), float(m.APFRejections), float(m.RenewalP99), m.FailedHeartbeats}
}

func (v verdict) measured() Measured {
	return Measured{v.FalseAlarms, float64(v.MutatingP99), float64(v.APFRejections), float64(v.RenewalP99), v.FailedHeartbeats}
}

// float is a float64 written as a JSON string, which may be NaN or ±Inf.
type float float64

func (f float) MarshalJSON() ([]byte, error) {
	return json.Marshal(strconv.FormatFloat(float64(f), 'g', -1, 64))
}

func (f *float) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := strconv.ParseFloat(s, 64)
	*f = float(v)
	return err
}
