package capacity

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/utils/clock"

	"fakelet.dev/fakelet/measure/load"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fakeFleet's levels follow its size: its mutating p99 is a second per 6,000 nodes, its renewal
// interval p99 10.2 s, and from alarmsFrom nodes on it has a false alarm. It is its run's clock too,
// on which waiting moves time on at once.
type fakeFleet struct {
	clock.Clock
	now        time.Time
	size       int
	grown      []int
	alarmsFrom int
	measured   [][2]time.Duration // each hold, from t0
	holds      []int              // the steps whose hold began
}

func (f *fakeFleet) Grow(_ context.Context, n int) error {
	f.size = n
	f.grown = append(f.grown, n)
	return nil
}

// Now and NewTimer make the fleet the clock of its run too, on which a timer fires at once, the
// clock moved to its end.
func (f *fakeFleet) Now() time.Time { return f.now }
func (f *fakeFleet) NewTimer(d time.Duration) clock.Timer {
	f.now = f.now.Add(d)
	t := firedTimer(make(chan time.Time, 1))
	t <- f.now
	return t
}

type firedTimer chan time.Time

func (t firedTimer) C() <-chan time.Time      { return t }
func (firedTimer) Stop() bool                 { return false }
func (firedTimer) Reset(time.Duration) bool   { panic("fakeFleet's timers are not reset") }
func (f *fakeFleet) Hold(n int, at time.Time) { f.holds = append(f.holds, n) }
func (f *fakeFleet) Measure(_ context.Context, from, to time.Time) (Measured, []load.Process, error) {
	f.measured = append(f.measured, [2]time.Duration{from.Sub(t0), to.Sub(t0)})
	m := Measured{MutatingP99: float64(f.size) / 6000, RenewalP99: 10.2}
	if f.alarmsFrom > 0 && f.size >= f.alarmsFrom {
		m.FalseAlarms = 1
	}
	return m, []load.Process{{Component: "kube-apiserver", CPUCores: float64(f.size) / 10000}}, nil
}

func config(start, step, max int) Config {
	return Config{Start: start, Step: step, Max: max, Settle: time.Minute, Hold: 2 * time.Minute,
		Levels: DefaultLevels(), RenewInterval: 10 * time.Second}
}

func TestRunStopsAtTheFirstBrokenStep(t *testing.T) {
	f := &fakeFleet{now: t0}
	r, err := Run(context.Background(), config(2000, 3000, 10000), f, f)
	if err != nil {
		t.Fatal(err)
	}
	// 2,000 and 5,000 hold (p99 0.33 s, 0.83 s); 8,000 breaks the 1 s (1.33 s); 10,000 never runs.
	if !reflect.DeepEqual(f.grown, []int{2000, 5000, 8000}) {
		t.Errorf("grown to %v, want 2000, 5000, 8000", f.grown)
	}
	if r.Held != 5000 || r.Broke == nil || r.Broke.Level != LevelMutatingP99 || r.Broke.Limit != 1 {
		t.Fatalf("held %d, broke %+v: want 5000 held and the mutating p99 broken", r.Held, r.Broke)
	}
	if by := r.Broke.By(); by < 0.33 || by > 0.34 {
		t.Errorf("broken by %.3f, want a third", by)
	}
	// Each step settles a minute, then holds two: the holds are [1m, 3m), [4m, 6m), [7m, 9m).
	want := [][2]time.Duration{{time.Minute, 3 * time.Minute}, {4 * time.Minute, 6 * time.Minute}, {7 * time.Minute, 9 * time.Minute}}
	if !reflect.DeepEqual(f.measured, want) {
		t.Errorf("held %v, want %v", f.measured, want)
	}
	if len(r.Steps) != 3 || len(r.Steps[2].Broken) != 1 || r.Steps[1].Broken != nil {
		t.Errorf("steps %+v", r.Steps)
	}
}

func TestRunThatHoldsToMaxEndsAtMax(t *testing.T) {
	f := &fakeFleet{now: t0}
	r, err := Run(context.Background(), config(1000, 1500, 4000), f, f)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.grown, []int{1000, 2500, 4000}) || r.Held != 4000 || r.Broke != nil {
		t.Errorf("grown to %v, held %d, broke %+v: want the last step at --max, held", f.grown, r.Held, r.Broke)
	}
}

func TestAFalseAlarmAtTheFirstStepHoldsNothing(t *testing.T) {
	f := &fakeFleet{now: t0, alarmsFrom: 1}
	r, err := Run(context.Background(), config(1000, 1000, 3000), f, f)
	if err != nil {
		t.Fatal(err)
	}
	if r.Held != 0 || r.Broke == nil || r.Broke.Level != LevelFalseAlarms || len(r.Steps) != 1 {
		t.Errorf("held %d, broke %+v after %d steps: want nothing held, a false alarm", r.Held, r.Broke, len(r.Steps))
	}
}

func TestLevelsCheck(t *testing.T) {
	l := DefaultLevels()
	ok := Measured{MutatingP99: 0.2, RenewalP99: 10.9}
	if b := l.Check(ok, 10*time.Second); b != nil {
		t.Errorf("a healthy step broke %+v", b)
	}
	bad := Measured{FalseAlarms: 2, MutatingP99: 0.2, APFRejections: 3, RenewalP99: 11.5, FailedHeartbeats: 1}
	var levels []string
	for _, b := range l.Check(bad, 10*time.Second) {
		levels = append(levels, b.Level)
	}
	if got := strings.Join(levels, ","); got != "false-alarms,apf-rejections,renewal-p99,failed-heartbeats" {
		t.Errorf("broken levels %s", got)
	}
	if b := l.Check(Measured{}, 10*time.Second); b != nil {
		t.Errorf("status mode (no renewals) broke %+v", b)
	}
}

func TestFlagsValidation(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" for valid
	}{
		{nil, ""},
		{[]string{"--start", "0"}, "--start must be positive"},
		{[]string{"--step", "-5"}, "--step must be positive"},
		{[]string{"--start", "5000", "--max", "4000"}, "--max (4000) must be at least --start (5000)"},
		{[]string{"--max", "2000000"}, "more than the largest fleet"},
		{[]string{"--settle", "-1s"}, "--settle must not be negative"},
		{[]string{"--hold", "15s"}, "--hold must be at least two renew intervals (20s)"},
		{[]string{"--max-false-alarms", "-1"}, "--max-false-alarms must not be negative"},
		{[]string{"--max-mutating-p99", "0s"}, "--max-mutating-p99 must be positive"},
		{[]string{"--max-apf-rejections", "-1"}, "--max-apf-rejections must not be negative"},
		{[]string{"--max-renewal-p99-slack", "NaN"}, "--max-renewal-p99-slack must be between 0 and 3"},
		{[]string{"--max-renewal-p99-slack", "-0.1"}, "--max-renewal-p99-slack must be between 0 and 3"},
		{[]string{"--max-failed-heartbeats", "-2"}, "--max-failed-heartbeats must not be negative"},
	} {
		var c Config
		fs := pflag.NewFlagSet("capacity", pflag.ContinueOnError)
		AddFlags(fs, &c)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		c.RenewInterval = 10 * time.Second
		err := c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestRunStopsWithTheContext(t *testing.T) {
	f := &fakeFleet{now: t0}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err := Run(ctx, config(1000, 1000, 3000), f, clock.RealClock{})
	if !errors.Is(err, context.Canceled) || len(r.Steps) != 0 {
		t.Errorf("steps %d, err %v: want none and the context's error", len(r.Steps), err)
	}
}

func TestEveryStepsHoldBeginsAndCarriesItsProcesses(t *testing.T) {
	f := &fakeFleet{now: t0}
	r, err := Run(context.Background(), config(1000, 1000, 3000), f, f)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.holds, []int{1000, 2000, 3000}) {
		t.Errorf("holds began for %v, want every step", f.holds)
	}
	if p := r.Steps[1].Processes; len(p) != 1 || p[0].CPUCores != 0.2 {
		t.Errorf("the second step's processes %+v, want the apiserver's 0.2 cores", p)
	}
}
