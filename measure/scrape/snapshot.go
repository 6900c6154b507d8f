package scrape

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Snapshot is one scrape of one component, reduced to the selected series.
type Snapshot struct {
	Component string    `json:"component"`
	At        time.Time `json:"at"`
	// Err says why the scrape failed; Families is empty then.
	Err      string             `json:"err,omitempty"`
	Families map[string]*Family `json:"families,omitempty"`
}

// Family is one metric family: its series, summed over every label it does not keep.
type Family struct {
	// Type is counter, gauge or histogram. A gauge that only grows (etcd_disk_wal_write_bytes_total)
	// is read as a counter: Selection decides, not the exposition.
	Type   string   `json:"type"`
	Labels []string `json:"labels,omitempty"`
	// Series by their label values joined with "|" (see Key).
	Series map[string]*Series `json:"series"`
}

// Series is one series of a family.
type Series struct {
	// Labels are the values of the family's Labels, in order.
	Labels []string `json:"labels,omitempty"`
	// Value is a counter's or gauge's value, a histogram's count.
	Value float64 `json:"value"`
	// Sum, Bounds and Buckets are a histogram's: the sum of observations, the buckets' upper bounds
	// (+Inf last) and their cumulative counts.
	Sum     float64   `json:"sum,omitempty"`
	Bounds  []float64 `json:"bounds,omitempty"`
	Buckets []float64 `json:"buckets,omitempty"`
}

// Key joins label values into a series key.
func Key(values ...string) string { return strings.Join(values, "|") }

// Series returns the series of family name with the given label values, or nil.
func (s *Snapshot) Series(name string, values ...string) *Series {
	if f := s.Families[name]; f != nil {
		return f.Series[Key(values...)]
	}
	return nil
}

// Value returns the value of a series, or 0 and false if the snapshot does not have it.
func (s *Snapshot) Value(name string, values ...string) (float64, bool) {
	if sr := s.Series(name, values...); sr != nil {
		return sr.Value, true
	}
	return 0, false
}

// Metric says what to keep of one metric family: its type and the labels to group by.
type Metric struct {
	Type   string
	Labels []string
}

// Metric types as Family.Type names them.
const (
	Counter   = "counter"
	Gauge     = "gauge"
	Histogram = "histogram"
)

// Parse decodes an exposition (text or delimited protobuf, as format says; see expfmt.ResponseFormat)
// and keeps the families of sel.
func Parse(r io.Reader, format expfmt.Format, sel map[string]Metric) (map[string]*Family, error) {
	p := parser{sel: sel, out: map[string]*Family{}, bounds: map[string][]float64{}}
	if format.FormatType() == expfmt.TypeProtoDelim {
		return p.out, p.delimited(r)
	}
	return p.out, p.decoded(expfmt.NewDecoder(r, format))
}

// decoded keeps the selected families of what dec decodes, every family decoded whole.
func (p *parser) decoded(dec expfmt.Decoder) error {
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if err := p.family(&mf); err != nil {
			return err
		}
	}
}

// parser is one exposition's parse into the families of sel.
type parser struct {
	sel    map[string]Metric
	out    map[string]*Family
	bounds map[string][]float64 // one slice per distinct set of bucket bounds
}

// family keeps mf if sel selects it.
func (p *parser) family(mf *dto.MetricFamily) error {
	m, ok := p.sel[mf.GetName()]
	if !ok {
		return nil
	}
	f := &Family{Type: m.Type, Labels: m.Labels, Series: map[string]*Series{}}
	for _, metric := range mf.GetMetric() {
		if err := f.add(metric, p.bounds); err != nil {
			return fmt.Errorf("metric %s: %w", mf.GetName(), err)
		}
	}
	p.out[mf.GetName()] = f
	return nil
}

// add sums one metric into the family's series of its kept label values.
func (f *Family) add(m *dto.Metric, bounds map[string][]float64) error {
	values := make([]string, len(f.Labels))
	for _, lp := range m.GetLabel() {
		if i := slices.Index(f.Labels, lp.GetName()); i >= 0 {
			values[i] = lp.GetValue()
		}
	}
	key := Key(values...)
	s := f.Series[key]
	if s == nil {
		s = &Series{Labels: values}
		f.Series[key] = s
	}
	switch {
	case m.Histogram != nil:
		if f.Type != Histogram {
			return fmt.Errorf("selected as a %s, exposed as a histogram", f.Type)
		}
		h := m.GetHistogram()
		b := make([]float64, 0, len(h.GetBucket())+1)
		counts := make([]float64, 0, len(h.GetBucket())+1)
		for _, bk := range h.GetBucket() {
			b = append(b, bk.GetUpperBound())
			counts = append(counts, float64(bk.GetCumulativeCount()))
		}
		if len(b) == 0 || !math.IsInf(b[len(b)-1], 1) {
			b = append(b, math.Inf(1))
			counts = append(counts, float64(h.GetSampleCount()))
		}
		b = internBounds(bounds, b)
		switch {
		case s.Bounds == nil:
			s.Bounds, s.Buckets = b, counts
		case slices.Equal(s.Bounds, b):
			for i := range counts {
				s.Buckets[i] += counts[i]
			}
		default:
			return fmt.Errorf("series %s: buckets differ between summed series", key)
		}
		s.Value += float64(h.GetSampleCount())
		s.Sum += h.GetSampleSum()
	case m.Counter != nil:
		s.Value += m.GetCounter().GetValue()
	case m.Gauge != nil:
		s.Value += m.GetGauge().GetValue()
	case m.Untyped != nil:
		s.Value += m.GetUntyped().GetValue()
	default:
		return errors.New("a summary or an unknown type; not supported")
	}
	return nil
}

func internBounds(seen map[string][]float64, b []float64) []float64 {
	k := fmt.Sprint(b)
	if v, ok := seen[k]; ok {
		return v
	}
	seen[k] = b
	return b
}
