package promrecord

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// fakeProm is a Prometheus server's HTTP query API over samples scraped from exposition texts. It
// evaluates only the expressions Read sends, as Prometheus 2.x does: an instant selector takes the
// latest sample within 5 minutes unless the series went stale (left its target's scrape);
// max_over_time() the largest sample in [t-range, t];
// increase() takes the samples in [t-range, t], corrects counter resets and extrapolates to the
// range's edges (promql/functions.go extrapolatedRate); sum by (...) adds the results up.
// The real thing is github.com/prometheus/prometheus/promql, whose module pulls some eighty others
// (cloud SDKs, gRPC, OpenTelemetry) into go.mod and bumps client_golang: too much for a test; the
// end-to-end test TestReportFromPrometheus runs the real server.
type fakeProm struct {
	series map[model.Fingerprint]*fakeSeries
	// last is each target's series in its latest scrape, for staleness.
	last map[string][]model.Fingerprint
}

type fakeSeries struct {
	metric model.Metric
	points []model.SamplePair
	stale  model.Time // when it left its target's scrape; 0 while it is in it
}

func newFakeProm() *fakeProm {
	return &fakeProm{series: map[model.Fingerprint]*fakeSeries{}, last: map[string][]model.Fingerprint{}}
}

// scrape adds a target's exposition text as scraped at at.
func (p *fakeProm) scrape(t *testing.T, job, instance string, at time.Time, text string) {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("%s %s: %v", job, instance, err)
	}
	ts := model.TimeFromUnixNano(at.UnixNano())
	var now []model.Fingerprint
	add := func(name string, labels map[string]string, v float64) {
		m := model.Metric{model.MetricNameLabel: model.LabelValue(name), "job": model.LabelValue(job), "instance": model.LabelValue(instance)}
		for k, lv := range labels {
			m[model.LabelName(k)] = model.LabelValue(lv)
		}
		fp := m.Fingerprint()
		s := p.series[fp]
		if s == nil {
			s = &fakeSeries{metric: m}
			p.series[fp] = s
		}
		s.points, s.stale = append(s.points, model.SamplePair{Timestamp: ts, Value: model.SampleValue(v)}), 0
		now = append(now, fp)
	}
	for name, mf := range fams {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			switch {
			case m.Histogram != nil:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					labels["le"] = strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)
					add(name+"_bucket", labels, float64(b.GetCumulativeCount()))
				}
				labels["le"] = "+Inf"
				add(name+"_bucket", labels, float64(h.GetSampleCount()))
				delete(labels, "le")
				add(name+"_count", labels, float64(h.GetSampleCount()))
				add(name+"_sum", labels, h.GetSampleSum())
			case m.Counter != nil:
				add(name, labels, m.GetCounter().GetValue())
			case m.Gauge != nil:
				add(name, labels, m.GetGauge().GetValue())
			default:
				add(name, labels, m.GetUntyped().GetValue())
			}
		}
	}
	target := job + "/" + instance
	for _, fp := range p.last[target] {
		if !slices.Contains(now, fp) {
			p.series[fp].stale = ts
		}
	}
	p.last[target] = now
}

var (
	sumByExpr    = regexp.MustCompile(`^sum by \(([^)]*)\) \((.*)\)$`)
	increaseExpr = regexp.MustCompile(`^increase\((.*)\[(\d+)ms\]\)$`)
	maxOverTime  = regexp.MustCompile(`^max_over_time\((.*)\[(\d+)ms\]\)$`)
	selectorExpr = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)\{job="([^"]*)"\}$`)
)

const lookbackMS = 5 * 60 * 1000

// eval evaluates expr at ts.
func (p *fakeProm) eval(expr string, ts model.Time) (model.Vector, error) {
	if expr == "vector(1)" {
		return model.Vector{{Metric: model.Metric{}, Value: 1, Timestamp: ts}}, nil
	}
	if m := sumByExpr.FindStringSubmatch(expr); m != nil {
		inner, err := p.eval(m[2], ts)
		if err != nil {
			return nil, err
		}
		var by []model.LabelName
		for _, l := range strings.Split(m[1], ",") {
			if l = strings.TrimSpace(l); l != "" {
				by = append(by, model.LabelName(l))
			}
		}
		sums := map[model.Fingerprint]*model.Sample{}
		var out model.Vector
		for _, s := range inner {
			g := model.Metric{}
			for _, l := range by {
				if v, ok := s.Metric[l]; ok {
					g[l] = v
				}
			}
			if acc := sums[g.Fingerprint()]; acc != nil {
				acc.Value += s.Value
				continue
			}
			acc := &model.Sample{Metric: g, Value: s.Value, Timestamp: ts}
			sums[g.Fingerprint()] = acc
			out = append(out, acc)
		}
		return out, nil
	}
	if m := increaseExpr.FindStringSubmatch(expr); m != nil {
		rangeMS, _ := strconv.ParseInt(m[2], 10, 64)
		var out model.Vector
		for _, s := range p.selected(m[1]) {
			var in []model.SamplePair
			for _, pt := range s.points {
				if pt.Timestamp >= ts-model.Time(rangeMS) && pt.Timestamp <= ts {
					in = append(in, pt)
				}
			}
			if len(in) < 2 {
				continue
			}
			out = append(out, &model.Sample{Metric: dropName(s.metric), Value: model.SampleValue(increase(in, ts, rangeMS)), Timestamp: ts})
		}
		return out, nil
	}
	if m := maxOverTime.FindStringSubmatch(expr); m != nil {
		rangeMS, _ := strconv.ParseInt(m[2], 10, 64)
		var out model.Vector
		for _, s := range p.selected(m[1]) {
			top, found := math.Inf(-1), false
			for _, pt := range s.points {
				if pt.Timestamp >= ts-model.Time(rangeMS) && pt.Timestamp <= ts {
					top, found = max(top, float64(pt.Value)), true
				}
			}
			if found {
				out = append(out, &model.Sample{Metric: dropName(s.metric), Value: model.SampleValue(top), Timestamp: ts})
			}
		}
		return out, nil
	}
	if selectorExpr.MatchString(expr) {
		var out model.Vector
		for _, s := range p.selected(expr) {
			i := sortSearch(s.points, ts)
			if i < 0 || ts-s.points[i].Timestamp > lookbackMS || (s.stale != 0 && s.stale <= ts && s.stale > s.points[i].Timestamp) {
				continue
			}
			out = append(out, &model.Sample{Metric: s.metric, Value: s.points[i].Value, Timestamp: ts})
		}
		return out, nil
	}
	return nil, fmt.Errorf("the fake Prometheus does not evaluate %q", expr)
}

// sortSearch is the index of the latest point at or before ts, or -1.
func sortSearch(points []model.SamplePair, ts model.Time) int {
	i := -1
	for j, p := range points {
		if p.Timestamp <= ts {
			i = j
		}
	}
	return i
}

func (p *fakeProm) selected(selector string) []*fakeSeries {
	m := selectorExpr.FindStringSubmatch(selector)
	if m == nil {
		return nil
	}
	var out []*fakeSeries
	for _, s := range p.series {
		if string(s.metric[model.MetricNameLabel]) == m[1] && string(s.metric["job"]) == m[2] {
			out = append(out, s)
		}
	}
	return out
}

func dropName(m model.Metric) model.Metric {
	c := m.Clone()
	delete(c, model.MetricNameLabel)
	return c
}

// increase is Prometheus 2.x's extrapolatedRate for increase(), of samples in [ts-range, ts].
func increase(in []model.SamplePair, ts model.Time, rangeMS int64) float64 {
	first, last := in[0], in[len(in)-1]
	result := float64(last.Value - first.Value)
	prev := float64(first.Value)
	for _, pt := range in[1:] {
		if v := float64(pt.Value); v < prev {
			result += prev
		}
		prev = float64(pt.Value)
	}
	rangeStart := float64(ts)/1000 - float64(rangeMS)/1000
	durationToStart := float64(first.Timestamp)/1000 - rangeStart
	durationToEnd := float64(ts)/1000 - float64(last.Timestamp)/1000
	sampled := float64(last.Timestamp-first.Timestamp) / 1000
	avg := sampled / float64(len(in)-1)
	if result > 0 && first.Value >= 0 {
		if toZero := sampled * (float64(first.Value) / result); toZero < durationToStart {
			durationToStart = toZero
		}
	}
	threshold := avg * 1.1
	interval := sampled
	if durationToStart < threshold {
		interval += durationToStart
	} else {
		interval += avg / 2
	}
	if durationToEnd < threshold {
		interval += durationToEnd
	} else {
		interval += avg / 2
	}
	return result * (interval / sampled)
}

// server serves the query API: /api/v1/query and /api/v1/query_range.
func (p *fakeProm) server(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answer := func(kind string, result any, err error) {
			w.Header().Set("Content-Type", "application/json")
			if err != nil {
				w.WriteHeader(http.StatusBadRequest)
				json.NewEncoder(w).Encode(map[string]any{"status": "error", "errorType": "bad_data", "error": err.Error()})
				return
			}
			json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": kind, "result": result}})
		}
		parseTime := func(name string) model.Time {
			f, _ := strconv.ParseFloat(r.FormValue(name), 64)
			return model.TimeFromUnixNano(int64(math.Round(f * 1e9)))
		}
		switch r.URL.Path {
		case "/api/v1/query":
			vec, err := p.eval(r.FormValue("query"), parseTime("time"))
			if vec == nil {
				vec = model.Vector{}
			}
			answer("vector", vec, err)
		case "/api/v1/query_range":
			start, end := parseTime("start"), parseTime("end")
			stepSecs, _ := strconv.ParseFloat(r.FormValue("step"), 64)
			step := model.Time(stepSecs * 1000)
			streams := map[model.Fingerprint]*model.SampleStream{}
			out := model.Matrix{}
			for ts := start; ts <= end; ts += step {
				vec, err := p.eval(r.FormValue("query"), ts)
				if err != nil {
					answer("matrix", nil, err)
					return
				}
				for _, s := range vec {
					ss := streams[s.Metric.Fingerprint()]
					if ss == nil {
						ss = &model.SampleStream{Metric: s.Metric}
						streams[s.Metric.Fingerprint()] = ss
						out = append(out, ss)
					}
					ss.Values = append(ss.Values, model.SamplePair{Timestamp: ts, Value: s.Value})
				}
			}
			answer("matrix", out, nil)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}
