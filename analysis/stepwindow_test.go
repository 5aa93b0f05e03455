package analysis

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// TestIdleInSteps: device 0 runs a kernel, then waits 890 ns for its communicator (the first
// step's setup, 0–900), then two steps' kernels. Idle is 930 ns in all, but inside the steps, the
// setup left out (900–1100), only the gaps 950–980 and 1050–1060: 40 ns, on the device and on its
// stream. The answer does not depend on whether a step is marked before its ops (an importer
// sorting by start) or after them (the simulator marks a step when it ends).
func TestIdleInSteps(t *testing.T) {
	ops := []timeline.Event{kern(0, 1, 0, 10), commInitEv(1, 0, 10, 900), kern(0, 1, 900, 950), kern(0, 1, 980, 1000)}
	step1 := rankStep(1, timeline.NoDevice, 0, 1000)
	later := []timeline.Event{kern(0, 1, 1000, 1050), kern(0, 1, 1060, 1100)}
	step2 := rankStep(2, timeline.NoDevice, 1000, 1100)
	orders := map[string][]timeline.Event{
		"steps last":  slices.Concat(ops, []timeline.Event{step1}, later, []timeline.Event{step2}),
		"steps first": slices.Concat([]timeline.Event{step1}, ops, []timeline.Event{step2}, later),
	}
	for name, evs := range orders {
		t.Run(name, func(t *testing.T) {
			a := New(timeline.Meta{})
			for i := range evs {
				a.Emit(&evs[i])
			}
			r := a.Result(nil)
			if r.Steps.SetupNs == nil || *r.Steps.SetupNs != 900 || r.Breakdown.IdleNs != 930 {
				t.Fatalf("setup, idle = %v, %d; want 900, 930", r.Steps.SetupNs, r.Breakdown.IdleNs)
			}
			in := r.Breakdown.InSteps
			if in == nil {
				t.Fatal("InSteps = nil; want the idle inside the steps")
			}
			if in.DeviceNs != 40 || in.StreamNs != 40 || in.ByCause["kernel_wait"] != 40 {
				t.Errorf("inside the steps: device %d, stream %d, by cause %v; want 40, 40, kernel_wait 40", in.DeviceNs, in.StreamNs, in.ByCause)
			}
		})
	}
}

// TestIdleInStepsOutside: idle before the first step, between steps and after the last is not
// inside them; a run without steps has no figure.
func TestIdleInStepsOutside(t *testing.T) {
	evs := []timeline.Event{
		kern(0, 1, 0, 10), kern(0, 1, 100, 150), rankStep(1, timeline.NoDevice, 100, 200), kern(0, 1, 190, 200),
		kern(0, 1, 300, 320), rankStep(2, timeline.NoDevice, 300, 400), kern(0, 1, 350, 400), kern(0, 1, 500, 510),
	}
	a := New(timeline.Meta{})
	for i := range evs {
		a.Emit(&evs[i])
	}
	in := a.Result(nil).Breakdown.InSteps
	// Inside: 150–190 (40) and 320–350 (30).
	if in == nil || in.DeviceNs != 70 || in.StreamNs != 70 {
		t.Errorf("inside the steps = %+v; want device 70, stream 70", in)
	}
	b := New(timeline.Meta{})
	for _, e := range []timeline.Event{kern(0, 1, 0, 10), kern(0, 1, 100, 150)} {
		b.Emit(&e)
	}
	if in := b.Result(nil).Breakdown.InSteps; in != nil {
		t.Errorf("without steps, InSteps = %+v; want nil (unknown)", in)
	}
}

// TestIdleInStepsPastGapCap: more stream gaps than are held exactly (maxPendingGaps), with some
// before the first step and after the last. Whether the steps are marked after their ops (a
// recording, in the order ops end) or before them (a trace sorted by start) the figure is the
// same, and within the error it states of the exact figure, worked out here gap by gap.
func TestIdleInStepsPastGapCap(t *testing.T) {
	const (
		devs   = 40
		perDev = maxPendingGaps/devs + 100 // gaps inside the steps, per device
		from   = 1000                      // the first step's start
		period = 100                       // a kernel of 60 ns every 100 ns: gaps of 40 ns
	)
	mid := int64(from + period*perDev/2)
	end := int64(from + period*perDev)
	var ops []timeline.Event
	var exact int64
	for d := int32(0); d < devs; d++ {
		ops = append(ops, kern(d, 1, 0, 10)) // then a gap of 990 ns before the first step
		for i := range int64(perDev) {
			at := from + i*period
			ops = append(ops, kern(d, 1, at, at+60))
			if i > 0 {
				exact += 40 // the gap before it
			}
		}
		// After the last step: a gap of 540 ns, its first 40 inside the step.
		ops = append(ops, kern(d, 1, end+500, end+600))
		exact += 40
	}
	steps := []timeline.Event{rankStep(1, timeline.NoDevice, from, mid), rankStep(2, timeline.NoDevice, mid, end)}
	orders := map[string][]timeline.Event{
		"steps last":  slices.Concat(ops, steps),
		"steps first": slices.Concat(steps, ops),
	}
	var got []IdleInSteps
	for _, name := range []string{"steps last", "steps first"} {
		evs := orders[name]
		a := New(timeline.Meta{})
		for i := range evs {
			a.Emit(&evs[i])
		}
		in := a.Result(nil).Breakdown.InSteps
		if in == nil {
			t.Fatalf("%s: InSteps = nil; want the idle inside the steps", name)
		}
		if d := in.StreamNs - exact; in.StreamErrorNs <= 0 || max(d, -d) > in.StreamErrorNs {
			t.Errorf("%s: stream gaps inside the steps %d ± %d; want an estimate within its error of the exact %d", name, in.StreamNs, in.StreamErrorNs, exact)
		}
		t.Logf("%s: %d ± %d; exact %d", name, in.StreamNs, in.StreamErrorNs, exact)
		got = append(got, *in)
	}
	if got[0].StreamNs != got[1].StreamNs || got[0].StreamErrorNs != got[1].StreamErrorNs || !maps.Equal(got[0].ByCause, got[1].ByCause) {
		t.Errorf("steps last %+v, steps first %+v; want the same figure in either order", got[0], got[1])
	}
}

// TestGapBinsOrder: the bins, their width included, are the same whichever order the gaps come
// in, also when they widen many times and lie before time 0.
func TestGapBinsOrder(t *testing.T) {
	var gaps [][2]int64
	for i := range int64(3 * maxGapBins) {
		at := -5_000_000 + i*i*37 // spread wider and wider: the bins widen as they come
		gaps = append(gaps, [2]int64{at, at + 1 + i%5000})
	}
	fwd, rev := newGapBins(), newGapBins()
	for i, g := range gaps {
		fwd.add(g[0], g[1], Cause(i%int(causeCount)))
	}
	for i := len(gaps) - 1; i >= 0; i-- {
		rev.add(gaps[i][0], gaps[i][1], Cause(i%int(causeCount)))
	}
	if fwd.shift != rev.shift || fwd.base != rev.base || !slices.Equal(fwd.bins(), rev.bins()) {
		t.Fatalf("in order: width 2^%d, %d bins; reversed: 2^%d, %d bins; want the same", fwd.shift, fwd.n, rev.shift, rev.n)
	}
	if fwd.shift == minBinShift || fwd.n > maxGapBins {
		t.Fatalf("width 2^%d, %d bins; want widened, at most %d bins", fwd.shift, fwd.n, maxGapBins)
	}
	var sum, want int64
	for _, v := range fwd.bins() {
		sum += v.Total()
	}
	for _, g := range gaps {
		want += g[1] - g[0]
	}
	if sum != want {
		t.Errorf("the bins hold %d ns; want every gap's %d", sum, want)
	}
}

// TestGapBinsFirstGapLong: a first gap longer than the bins can span at the first width widens
// them before anything is held, and every nanosecond of it is in them.
func TestGapBinsFirstGapLong(t *testing.T) {
	for _, g := range [][2]int64{{1 << 40, 1<<40 + 1<<30}, {-(1 << 35), 1 << 35}, {0, maxGapBins << minBinShift}} {
		b := newGapBins()
		b.add(g[0], g[1], CauseOther)
		b.add(g[1], g[1]+1, CauseOther)
		var sum int64
		for _, v := range b.bins() {
			sum += v.Total()
		}
		if want := g[1] + 1 - g[0]; sum != want || b.n > maxGapBins {
			t.Errorf("gap %v: %d bins holding %d ns; want at most %d bins holding %d", g, b.n, sum, maxGapBins, want)
		}
	}
}

// TestGapBinsAgainstPerBin: the bins' sums, their ends and whole-bin counts put together, are
// what adding each gap's overlap to every bin it crosses gives, at the width the bins end with:
// gaps inside one bin, across two, across hundreds, before time 0, and enough of them, spread
// wide enough, to widen the bins several times.
func TestGapBinsAgainstPerBin(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 34))
	for _, tc := range []struct {
		name      string
		n         int
		from, to  int64 // where gaps start
		maxLength int64
		widened   bool // the bins end wider than minBinShift
	}{
		{"short, one width", 2000, 0, 1 << 20, 900, false},
		{"across bins", 2000, 0, 1 << 21, 1 << 14, false},
		{"long, widening", 3000, -(1 << 24), 1 << 30, 1 << 26, true},
		{"before time 0", 500, -(1 << 28), -(1 << 20), 1 << 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newGapBins()
			type gap struct {
				start, end int64
				c          Cause
			}
			var gaps []gap
			for range tc.n {
				start := tc.from + rng.Int64N(tc.to-tc.from)
				g := gap{start, start + 1 + rng.Int64N(tc.maxLength), Cause(rng.IntN(int(causeCount)))}
				gaps = append(gaps, g)
				b.add(g.start, g.end, g.c)
			}
			if widened := b.shift > minBinShift; widened != tc.widened {
				t.Fatalf("width 2^%d: widened %v; want %v", b.shift, widened, tc.widened)
			}
			want := make([]CauseNs, b.n)
			for _, g := range gaps {
				for i := g.start >> b.shift; i <= (g.end-1)>>b.shift; i++ {
					want[i-b.base][g.c] += min(g.end, (i+1)<<b.shift) - max(g.start, i<<b.shift)
				}
			}
			got := b.bins()
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("width 2^%d, bin %d of %d: %v; want %v", b.shift, i, len(want), got[i], want[i])
				}
			}
		})
	}
}
