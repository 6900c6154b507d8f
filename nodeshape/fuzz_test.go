package nodeshape

import (
	"strings"
	"testing"
)

// The parsers take user input from flags: whatever they accept passes its own check again, and
// nothing panics.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"pool=big", "a=b:NoSchedule", "k:NoExecute", "cpu=4,memory=16Gi,pods=50", "pods=1.5", "=:", ",", "cpu=1e400",
		"kubernetes.io/hostname=x", "memory=-0", "pods=250", "cpu=0.0000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if k, v, err := ParseLabel(s); err == nil {
			if CheckLabel(k, v) != nil || k+"="+v != s {
				t.Errorf("ParseLabel(%q) accepted %q=%q", s, k, v)
			}
		}
		if taint, err := ParseTaint(s); err == nil && CheckTaint(taint) != nil {
			t.Errorf("ParseTaint(%q) accepted %+v", s, taint)
		}
		if list, err := ParseAllocatable(s); err == nil {
			if len(list) != strings.Count(s, ",")+1 {
				t.Errorf("ParseAllocatable(%q) = %v: not one quantity per pair", s, list)
			}
			for name, q := range list {
				if err := CheckAllocatable(name, q); err != nil {
					t.Errorf("ParseAllocatable(%q) accepted %s=%s: %v", s, name, q.String(), err)
				}
			}
		}
	})
}
