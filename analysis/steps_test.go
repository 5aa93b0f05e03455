package analysis

import (
	"math"
	"slices"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

func TestSteps(t *testing.T) {
	tests := []struct {
		name           string
		evs            []timeline.Event
		from           int64 // StartAt: a replay started there (0: from the start)
		count          int64
		mean, p50, p99 *int64
		last           *int64 // nil: the test does not look
		setup          int64
	}{
		{name: "no steps", evs: []timeline.Event{kern(0, 1, 0, 10)}},
		{
			name:  "durations",
			evs:   []timeline.Event{stepEv(0, 100), stepEv(100, 300), stepEv(300, 600), stepEv(600, 1000)},
			count: 4, mean: i64(250), p50: i64(200), p99: i64(400),
		},
		{
			name: "comm_init inside the first step is setup",
			evs: []timeline.Event{
				commInitEv(1, 0, 10, 60), commInitEv(1, 1, 20, 40), stepEv(0, 1000),
				commInitEv(2, 2, 1100, 1300), stepEv(1000, 1500),
			},
			// Step 1 counts from 60: 940; step 2 keeps its comm_init: 500. Each creation is its
			// device's first: the steady cost of one is unknown, the first step's are all setup.
			count: 2, mean: i64(720), p50: i64(500), p99: i64(940), setup: 60,
		},
		{
			name:  "comm_init before the first step is not setup",
			evs:   []timeline.Event{commInitEv(1, 0, 0, 50), stepEv(100, 200)},
			count: 1, mean: i64(100), p50: i64(100), p99: i64(100),
		},
		{
			name:  "comm_init straddling the first step's start",
			evs:   []timeline.Event{commInitEv(1, 0, 50, 150), stepEv(100, 1000)},
			count: 1, mean: i64(850), p50: i64(850), p99: i64(850), setup: 50,
		},
		{
			// The simulator's first step: a 940 ms communicator init, reported when it ends, then
			// 235 ms of work. Every figure leaves the setup out, the last step's too.
			name:  "one step: last leaves the setup out, as p50 does",
			evs:   []timeline.Event{commInitEv(1, 0, 0, 940), stepEv(0, 1175)},
			count: 1, mean: i64(235), p50: i64(235), p99: i64(235), last: i64(235), setup: 940,
		},
		{
			name:  "the first step ending last (events out of order): last leaves its setup out",
			evs:   []timeline.Event{stepEv(0, 1175), stepEv(10, 300), commInitEv(1, 0, 0, 940)},
			count: 2, mean: i64(262), p50: i64(235), p99: i64(290), last: i64(235), setup: 940,
		},
		{
			name:  "later steps: last is the latest step's",
			evs:   []timeline.Event{commInitEv(1, 0, 0, 940), stepEv(0, 1175), stepEv(1175, 1450), stepEv(1450, 1730)},
			count: 3, mean: i64(263), p50: i64(275), p99: i64(280), last: i64(280), setup: 940,
		},
		{
			// A replay from 941: the init (0–940) is not emitted, the first step (0–1175) is, as it
			// ends after 941. It is not counted: its setup is not in the stream.
			name: "from a time: a step under way there is not counted",
			evs:  []timeline.Event{stepEv(0, 1175), stepEv(1175, 1450), stepEv(1450, 1730)}, from: 941,
			count: 2, mean: i64(277), p50: i64(275), p99: i64(280), last: i64(280),
		},
		{
			name: "from a time: the setup of a step begun there is still setup",
			evs:  []timeline.Event{commInitEv(1, 0, 1000, 1100), stepEv(1000, 1400), stepEv(1400, 1700)}, from: 1000,
			count: 2, mean: i64(300), p50: i64(300), p99: i64(300), last: i64(300), setup: 100,
		},
		{
			name:  "comm_init past the first step's end: the whole step is setup",
			evs:   []timeline.Event{commInitEv(1, 0, 50, 1500), stepEv(100, 1000)},
			count: 1, mean: i64(0), p50: i64(0), p99: i64(0), setup: 900,
		},
		{
			// The communicator cache off: device 0 creates its communicators afresh every step,
			// the first one in the process paying a 900 ns bootstrap beyond the 20 ns each costs.
			// Only that excess is setup, so the first step pays its creations as the later do.
			name: "creations repeated every step: only the first creation's excess is setup",
			evs: []timeline.Event{
				commInitEv(1, 0, 0, 920), commInitEv(2, 0, 920, 940), stepEv(0, 950),
				commInitEv(3, 0, 950, 970), commInitEv(4, 0, 970, 990), stepEv(950, 1000),
			},
			count: 2, mean: i64(50), p50: i64(50), p99: i64(50), setup: 900,
		},
		{
			name: "later creations arrive first (out of order): the same",
			evs: []timeline.Event{
				commInitEv(4, 0, 970, 990), stepEv(950, 1000), commInitEv(3, 0, 950, 970),
				commInitEv(2, 0, 920, 940), stepEv(0, 950), commInitEv(1, 0, 0, 920),
			},
			count: 2, mean: i64(50), p50: i64(50), p99: i64(50), setup: 900,
		},
		{
			// A cache too small: the first step's communicators are hit within it, then evicted
			// and created again in the next: their steady cost stays in the first step too.
			name: "creations hit only within the first step keep their steady cost",
			evs: []timeline.Event{
				commInitEv(1, 0, 0, 920), instantComm(timeline.KindCommHit, 1, 921), commInitEv(2, 0, 921, 941), stepEv(0, 950),
				commInitEv(3, 0, 950, 970), commInitEv(4, 0, 970, 990), stepEv(950, 1000),
			},
			// Setup 941 − 2 × 20: the first step is 49, the second 50.
			count: 2, mean: i64(49), p50: i64(49), p99: i64(50), setup: 901,
		},
		{
			name:  "one step: no later step could reuse, every creation is setup",
			evs:   []timeline.Event{commInitEv(1, 0, 0, 920), commInitEv(2, 0, 920, 940), stepEv(0, 950)},
			count: 1, mean: i64(10), p50: i64(10), p99: i64(10), setup: 940,
		},
		{
			// The cache on: the first step's communicators are used again (hits), so creating them
			// was one-time setup, all of it, though a further creation tells the steady cost.
			name: "creations reused later are setup whole",
			evs: []timeline.Event{
				commInitEv(1, 0, 0, 920), commInitEv(2, 0, 920, 940), stepEv(0, 950),
				commInitEv(3, 0, 950, 970), instantComm(timeline.KindCommHit, 1, 975), instantComm(timeline.KindCommHit, 2, 976),
				stepEv(950, 1000),
			},
			count: 2, mean: i64(30), p50: i64(10), p99: i64(50), setup: 940,
		},
		{
			name:  "comm_init in a later step stays in it",
			evs:   []timeline.Event{stepEv(0, 100), commInitEv(1, 0, 150, 190), stepEv(100, 200)},
			count: 2, mean: i64(100), p50: i64(100), p99: i64(100),
		},
		{
			// Two ranks' profilers each mark ProfilerStep#551 and #552 (merged per-rank traces):
			// the job ran 2 steps, each from the first rank's start to the last rank's end.
			name: "ranks' marks of one step number are one step",
			evs: []timeline.Event{
				rankStep(551, 0, 0, 600), rankStep(551, 1, 20, 610), rankStep(552, 0, 600, 1200), rankStep(552, 1, 610, 1250),
			},
			count: 2, mean: i64(630), p50: i64(610), p99: i64(650), last: i64(650),
		},
		{
			name: "ranks' marks of one step number are one step, in any order",
			evs: []timeline.Event{
				rankStep(552, 1, 610, 1250), rankStep(551, 0, 0, 600), rankStep(552, 0, 600, 1200), rankStep(551, 1, 20, 610),
			},
			count: 2, mean: i64(630), p50: i64(610), p99: i64(650), last: i64(650),
		},
		{
			// The setup of the job's first step ends with the last rank's communicator creation.
			name: "the job's first step's setup is left out across ranks",
			evs: []timeline.Event{
				commInitEv(1, 0, 0, 900), commInitEv(1, 1, 30, 950), rankStep(1, 0, 0, 1000), rankStep(1, 1, 20, 1010),
				rankStep(2, 0, 1000, 1300), rankStep(2, 1, 1010, 1320),
			},
			count: 2, mean: i64(190), p50: i64(60), p99: i64(320), last: i64(320), setup: 950,
		},
		{
			// A rank that marks a number again (a source that numbers no step) begins a new step.
			name:  "a rank marking a number again begins a new step",
			evs:   []timeline.Event{rankStep(0, 0, 0, 100), rankStep(0, 1, 5, 110), rankStep(0, 0, 100, 300), rankStep(0, 1, 110, 320)},
			count: 2, mean: i64(165), p50: i64(110), p99: i64(220),
		},
		{
			name: "a first step that never ends: no setup known",
			evs:  []timeline.Event{commInitEv(1, 0, 0, 900), withStatus(rankStep(1, 0, 0, 5000), timeline.StatusError)},
		},
		{
			name:  "failed steps are not counted",
			evs:   []timeline.Event{withStatus(stepEv(0, 5000), timeline.StatusError), stepEv(5000, 5100)},
			count: 1, mean: i64(100), p50: i64(100), p99: i64(100),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := New(timeline.Meta{})
			a.StartAt(tc.from)
			for i := range tc.evs {
				a.Emit(&tc.evs[i])
			}
			s := a.Result(timeline.NewStrings()).Steps
			if s.Count != tc.count {
				t.Errorf("count = %d; want %d", s.Count, tc.count)
			}
			wantSetup := i64(tc.setup)
			if tc.count == 0 {
				wantSetup = nil // measured in the first step: unknown until it ends, not 0
			}
			eqPtrI(t, "SetupNs", s.SetupNs, wantSetup)
			eqPtrI(t, "MeanNs", s.MeanNs, tc.mean)
			eqPtrI(t, "P50Ns", s.P50Ns, tc.p50)
			eqPtrI(t, "P99Ns", s.P99Ns, tc.p99)
			if tc.last != nil {
				eqPtrI(t, "LastNs", s.LastNs, tc.last)
			}
		})
	}
}

// The duration runs from the time the analysis starts at, when a replay starts later than the
// first event it emits (an op under way then), so that FirstNs + DurationNs is the last end.
func TestDurationFrom(t *testing.T) {
	tests := []struct {
		name            string
		from            int64
		first, duration int64
	}{
		{"from the start", 0, 0, 2000},
		{"from within the first event", 941, 941, 1059},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := New(timeline.Meta{})
			a.StartAt(tc.from)
			for _, e := range []timeline.Event{stepEv(0, 1175), kern(0, 1, 1175, 2000)} {
				a.Emit(&e)
			}
			r := a.Result(nil)
			if r.FirstNs != tc.first || r.DurationNs != tc.duration {
				t.Errorf("first, duration = %d, %d; want %d, %d", r.FirstNs, r.DurationNs, tc.first, tc.duration)
			}
		})
	}
}

func TestCommCache(t *testing.T) {
	evict := func(comm uint32, st uint8) timeline.Event {
		e := instant(timeline.KindCommEvict, 900)
		e.Comm, e.Status = comm, st
		return e
	}
	hit := func(comm uint32, at int64) timeline.Event {
		e := instant(timeline.KindCommHit, at)
		e.Comm, e.Device = comm, 0
		return e
	}
	group := func(ops uint32) timeline.Event {
		e := instant(timeline.KindGroupLaunch, 5)
		e.Aux = ops
		return e
	}
	evs := []timeline.Event{
		// Communicator 1 over devices 2, 0, 1: ranks take 100, 300 and 200 ns; its cost is 300.
		commInitEv(1, 2, 0, 100), commInitEv(1, 0, 0, 300), commInitEv(1, 1, 10, 210),
		// Communicator 2 over devices 3 and 4: 50 and 70.
		commInitEv(2, 4, 400, 470), commInitEv(2, 3, 400, 450),
		// A host-side event names no device.
		commInitEv(2, timeline.NoDevice, 400, 420),
		hit(1, 500), hit(1, 600), hit(2, 700), hit(1, 800),
		evict(2, timeline.StatusLRU), evict(1, timeline.StatusFaulted),
		group(3), group(5),
	}
	cc, groups := analyze(timeline.Meta{}, evs...).CommCache, analyze(timeline.Meta{}, evs...).Groups
	if cc.Hits != 4 || cc.Misses != 2 || cc.Evictions != 2 || cc.InitNsTotal != 370 {
		t.Errorf("cache = %+v; want 4 hits, 2 misses, 2 evictions, 370 ns init", cc)
	}
	want := []Comm{
		{ID: 1, Devices: []int32{0, 1, 2}, CreatedNs: 0, InitNs: 300, Hits: 3, Evicted: true, Faulted: true},
		{ID: 2, Devices: []int32{3, 4}, CreatedNs: 400, InitNs: 70, Hits: 1, Evicted: true, Faulted: false},
	}
	if len(cc.Comms) != len(want) {
		t.Fatalf("comms = %+v", cc.Comms)
	}
	for i, c := range cc.Comms {
		w := want[i]
		if c.ID != w.ID || !slices.Equal(c.Devices, w.Devices) || c.CreatedNs != w.CreatedNs || c.InitNs != w.InitNs || c.Hits != w.Hits ||
			c.Evicted != w.Evicted || c.Faulted != w.Faulted {
			t.Errorf("comm %d = %+v; want %+v", i, c, w)
		}
	}
	if groups != (Groups{Known: true, Launches: 2, Ops: 8}) {
		t.Errorf("groups = %+v; want 2 launches, 8 ops", groups)
	}
}

// A communicator's init total follows its slowest rank, whatever order the ranks report in.
func TestCommInitSlowestRank(t *testing.T) {
	tests := []struct {
		name string
		durs []int64
		want int64
	}{
		{"increasing", []int64{10, 20, 30}, 30},
		{"decreasing", []int64{30, 20, 10}, 30},
		{"middle", []int64{10, 40, 20}, 40},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var evs []timeline.Event
			for r, d := range tc.durs {
				evs = append(evs, commInitEv(9, int32(r), 0, d))
			}
			cc := analyze(timeline.Meta{}, evs...).CommCache
			if cc.InitNsTotal != tc.want || cc.Misses != 1 || cc.Comms[0].InitNs != tc.want {
				t.Errorf("init total %d, misses %d, comm %+v; want %d, 1", cc.InitNsTotal, cc.Misses, cc.Comms[0], tc.want)
			}
		})
	}
}

// The communicators listed are bounded; forgetting one keeps the totals.
func TestCommsBounded(t *testing.T) {
	a := New(timeline.Meta{})
	for id := range uint32(MaxCommsKept + 20) {
		e := commInitEv(id+1, 0, int64(id), int64(id)+10)
		a.Emit(&e)
	}
	cc := a.Result(nil).CommCache
	if len(cc.Comms) != MaxCommsKept || cc.Misses != MaxCommsKept+20 || cc.InitNsTotal != 10*(MaxCommsKept+20) {
		t.Errorf("%d comms, %d misses, init %d; want %d, %d, %d", len(cc.Comms), cc.Misses, cc.InitNsTotal, MaxCommsKept,
			MaxCommsKept+20, 10*(MaxCommsKept+20))
	}
	if cc.Comms[0].ID != 21 {
		t.Errorf("oldest kept is %d; want 21 (the oldest forgotten first)", cc.Comms[0].ID)
	}
}

func instantComm(kind timeline.Kind, comm uint32, at int64) timeline.Event {
	e := instant(kind, at)
	e.Comm, e.Device = comm, 0
	return e
}

// rankStep is rank dev's mark of step number n.
func rankStep(n uint32, dev int32, start, end int64) timeline.Event {
	e := stepEv(start, end)
	e.Device, e.Aux = dev, n
	return e
}

// TestSteadyCreationFarDevice: a device past MaxDevices has its first communicator creation told
// from the later ones, as any device does: the later one's time is the steady cost.
func TestSteadyCreationFarDevice(t *testing.T) {
	for _, dev := range []int32{3, MaxDevices + 5, 70000, math.MaxInt32} {
		s := newSteps(0)
		s.creation(dev, timeline.Interval{Start: 0, End: 100})
		s.creation(dev, timeline.Interval{Start: 200, End: 210})
		if s.steadyNs != 10 {
			t.Errorf("device %d: steady creation %d ns; want 10 (its second creation's)", dev, s.steadyNs)
		}
	}
}
