package scrape

import (
	"os"
	"reflect"
	"testing"

	"github.com/prometheus/common/expfmt"
)

func TestParseKeepsSelectedFamiliesSummedOverOtherLabels(t *testing.T) {
	f, err := os.Open("testdata/apiserver.prom")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fams, err := Parse(f, expfmt.NewFormat(expfmt.TypeTextPlain), Selection)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fams["go_goroutines"]; ok {
		t.Error("kept go_goroutines, which is not selected")
	}
	s := &Snapshot{Families: fams}
	for _, tc := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"PUT", "leases", "", "200"}, 105}, // v1 and v1beta1 summed
		{[]string{"PUT", "leases", "", "409"}, 2},
		{[]string{"PATCH", "nodes", "status", "200"}, 7},
	} {
		if got, ok := s.Value("apiserver_request_total", tc.labels...); !ok || got != tc.want {
			t.Errorf("apiserver_request_total%v = %v, %v; want %v", tc.labels, got, ok, tc.want)
		}
	}
	h := s.Series("apiserver_request_duration_seconds", "PUT", "leases", "")
	if h == nil {
		t.Fatal("no PUT leases latency histogram")
	}
	if h.Value != 107 || h.Sum != 0.51 || !reflect.DeepEqual(h.Buckets, []float64{95, 105, 107}) {
		t.Errorf("PUT leases histogram count %v sum %v buckets %v; want 107, 0.51, [95 105 107]", h.Value, h.Sum, h.Buckets)
	}
	// etcd exposes its WAL byte count as a gauge; the selection reads it as the counter it is.
	if w := fams["etcd_disk_wal_write_bytes_total"]; w == nil || w.Type != Counter || w.Series[""].Value != 210552 {
		t.Errorf("etcd_disk_wal_write_bytes_total = %+v, want a counter of 210552", w)
	}
}
