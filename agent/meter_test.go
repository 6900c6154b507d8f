package agent

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestMeterCountsBodies(t *testing.T) {
	var m Meter
	ctx := context.WithValue(context.Background(), meterKey{}, &m)
	if MeterFrom(ctx) != &m || MeterFrom(context.Background()) != nil {
		t.Fatal("MeterFrom does not find the meter, or finds one where there is none")
	}
	put, _ := http.NewRequestWithContext(ctx, http.MethodPut, "https://apiserver/x", strings.NewReader("0123456789"))
	// An answer with a Content-Length is counted from it, without reading.
	m.Exchange(put, &http.Response{ContentLength: 300, Body: io.NopCloser(strings.NewReader(""))})
	// A streamed answer is counted as it is read.
	streamed := &http.Response{ContentLength: -1, Body: io.NopCloser(strings.NewReader(strings.Repeat("x", 5000)))}
	get, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://apiserver/x", nil)
	m.Exchange(get, streamed)
	if _, err := io.Copy(io.Discard, streamed.Body); err != nil {
		t.Fatal(err)
	}
	m.Exchange(get, nil) // no answer: a transport error
	if sent, received := m.take(); sent != 10 || received != 5300 {
		t.Errorf("counted %d bytes sent, %d received; want 10 and 5300", sent, received)
	}
	if sent, received := m.take(); sent != 0 || received != 0 {
		t.Errorf("take did not start again from zero: %d, %d", sent, received)
	}
}
