package fleetname

import "testing"

func TestNodeIndexInvertsNodeName(t *testing.T) {
	for _, i := range []int{0, 7, 42, 99999, 100000, 1234567} {
		if got, ok := NodeIndex("fk", NodeName("fk", i)); !ok || got != i {
			t.Errorf("NodeIndex(NodeName(%d)) = %d, %v", i, got, ok)
		}
	}
	for _, name := range []string{"fk-0001", "fk-000001", "fk--0001", "fk-+0001", "fk-0000x", "other-00001", "fk00001", "fk-"} {
		if i, ok := NodeIndex("fk", name); ok {
			t.Errorf("NodeIndex(%q) = %d, want no index", name, i)
		}
	}
}
