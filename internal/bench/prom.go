package bench

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// families is one scrape of a Prometheus endpoint.
type families map[string]*dto.MetricFamily

// scrape reads url, trying three times: a busy apiserver can miss a client timeout.
func scrape(client *http.Client, url string) (f families, err error) {
	for range 3 {
		if f, err = scrapeOnce(client, url); err == nil {
			return f, nil
		}
	}
	return nil, err
}

func scrapeOnce(client *http.Client, url string) (families, error) {
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("scrape %s: %s: %s", url, resp.Status, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	f, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", url, err)
	}
	return f, nil
}

func matches(m *dto.Metric, labels map[string]string) bool {
	for k, v := range labels {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == k {
				found = l.GetValue() == v
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// sum adds the counters, gauges or untyped values of name whose labels match.
func (f families) sum(name string, labels map[string]string) float64 {
	var s float64
	for _, m := range f[name].GetMetric() {
		if !matches(m, labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			s += m.GetCounter().GetValue()
		case m.Gauge != nil:
			s += m.GetGauge().GetValue()
		case m.Untyped != nil:
			s += m.GetUntyped().GetValue()
		}
	}
	return s
}

// buckets is a cumulative histogram: upper bound -> count.
type buckets map[float64]float64

// histogram adds up the buckets of the histograms of name whose labels match.
func (f families) histogram(name string, labels map[string]string) buckets {
	b := buckets{}
	for _, m := range f[name].GetMetric() {
		if !matches(m, labels) || m.Histogram == nil {
			continue
		}
		for _, bk := range m.GetHistogram().GetBucket() {
			if !math.IsInf(bk.GetUpperBound(), 1) { // the sample count stands for +Inf
				b[bk.GetUpperBound()] += float64(bk.GetCumulativeCount())
			}
		}
		b[math.Inf(1)] += float64(m.GetHistogram().GetSampleCount())
	}
	return b
}

// minus is the histogram of the observations made between then and b.
func (b buckets) minus(then buckets) buckets {
	d := buckets{}
	for le, n := range b {
		d[le] = n - then[le]
	}
	return d
}

// quantile estimates the q-quantile as Prometheus's histogram_quantile does: linear within the
// bucket that holds it. NaN if the histogram is empty.
func (b buckets) quantile(q float64) float64 {
	bounds := make([]float64, 0, len(b))
	for le := range b {
		bounds = append(bounds, le)
	}
	sort.Float64s(bounds)
	if len(bounds) == 0 || b[math.Inf(1)] == 0 {
		return math.NaN()
	}
	rank := q * b[math.Inf(1)]
	prevBound, prevCount := 0.0, 0.0
	for _, le := range bounds {
		if n := b[le]; n >= rank {
			if math.IsInf(le, 1) {
				return prevBound
			}
			if n == prevCount {
				return le
			}
			return prevBound + (le-prevBound)*(rank-prevCount)/(n-prevCount)
		}
		prevBound, prevCount = le, b[le]
	}
	return prevBound
}

// histogramSum adds up the sums of the histograms of name whose labels match.
func (f families) histogramSum(name string, labels map[string]string) float64 {
	var s float64
	for _, m := range f[name].GetMetric() {
		if matches(m, labels) && m.Histogram != nil {
			s += m.GetHistogram().GetSampleSum()
		}
	}
	return s
}
