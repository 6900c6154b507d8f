package report

import (
	"bytes"
	"io"
	"testing"
)

// FuzzRead gives Read arbitrary documents, seeded with a built report: it must never panic, an error
// must say something, and a report it accepts must render (text, HTML, perfdata) and merge with
// itself without panicking, as `fakelet report` and `fakelet report merge` do with a file.
func FuzzRead(f *testing.F) {
	var b bytes.Buffer
	if err := build(fixture()).WriteJSON(&b); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	f.Add([]byte(`{"version":"` + SchemaVersion + `"}`))
	f.Add([]byte(`{"version":"` + SchemaVersion + `","phases":[{"name":"a"}],"reactions":[{"phase":"a","samples":[1e308,-1]}],"nodes":{"timeline":[{"ready":-1}]}}`))
	f.Add([]byte(`{"version":"fakelet.dev/report/v0"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Read(bytes.NewReader(data))
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		for _, write := range []func(io.Writer) error{r.WriteText, r.WriteHTML, r.WritePerfData, r.WriteJSON} {
			_ = write(io.Discard)
		}
		if m, err := Merge([]*Report{r, r}); err == nil {
			_ = m.WriteText(io.Discard)
		}
	})
}
