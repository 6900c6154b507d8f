package enum

import "testing"

type color string

func TestParse(t *testing.T) {
	if got, err := Parse("color", "blue", color("red"), color("blue")); got != "blue" || err != nil {
		t.Errorf(`Parse("blue") = %q, %v; want "blue"`, got, err)
	}
	for _, tc := range []struct {
		values []color
		want   string
	}{
		{[]color{"red"}, `unknown color "" (want "red")`},
		{[]color{"red", "blue"}, `unknown color "" (want "red" or "blue")`},
		{[]color{"red", "green", "blue"}, `unknown color "" (want "red", "green" or "blue")`},
	} {
		got, err := Parse("color", "", tc.values...)
		if got != "" || err == nil || err.Error() != tc.want {
			t.Errorf("Parse(%q) = %q, %v; want %s", "", got, err, tc.want)
		}
	}
}
