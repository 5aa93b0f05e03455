package analysis

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/xfertop/xfertop/timeline"
)

func TestIntervalSetAdd(t *testing.T) {
	tests := []struct {
		name string
		adds [][2]int64
		want []timeline.Interval
	}{
		{"empty interval ignored", [][2]int64{{5, 5}, {7, 3}}, nil},
		{"appends in order", [][2]int64{{0, 1}, {2, 3}}, []timeline.Interval{iv(0, 1), iv(2, 3)}},
		{"touching merges", [][2]int64{{0, 1}, {1, 2}}, []timeline.Interval{iv(0, 2)}},
		{"inserts before", [][2]int64{{10, 20}, {0, 5}}, []timeline.Interval{iv(0, 5), iv(10, 20)}},
		{"inserts between", [][2]int64{{0, 5}, {20, 30}, {10, 12}}, []timeline.Interval{iv(0, 5), iv(10, 12), iv(20, 30)}},
		{"bridges several", [][2]int64{{0, 5}, {10, 12}, {20, 30}, {40, 50}, {3, 25}}, []timeline.Interval{iv(0, 30), iv(40, 50)}},
		{"inside one", [][2]int64{{0, 100}, {10, 20}}, []timeline.Interval{iv(0, 100)}},
		{"covers all", [][2]int64{{10, 20}, {30, 40}, {0, 50}}, []timeline.Interval{iv(0, 50)}},
		{"touches left end", [][2]int64{{10, 20}, {30, 40}, {5, 10}}, []timeline.Interval{iv(5, 20), iv(30, 40)}},
		{"touches right start", [][2]int64{{10, 20}, {30, 40}, {25, 30}}, []timeline.Interval{iv(10, 20), iv(25, 40)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var u intervalSet
			for _, a := range tc.adds {
				u.add(a[0], a[1])
			}
			if !slices.Equal(u.intervals(), tc.want) {
				t.Errorf("set = %v; want %v", u.intervals(), tc.want)
			}
			if got, want := u.length(), timeline.Length(tc.want); got != want {
				t.Errorf("length = %d; want %d", got, want)
			}
		})
	}
}

func TestIntervalSetCut(t *testing.T) {
	var u intervalSet
	for _, a := range [][2]int64{{0, 10}, {20, 30}, {40, 50}} {
		u.add(a[0], a[1])
	}
	before := u.cut(25, nil)
	if want := []timeline.Interval{iv(0, 10), iv(20, 25)}; !slices.Equal(before, want) {
		t.Errorf("cut(25) = %v; want %v", before, want)
	}
	if want := []timeline.Interval{iv(25, 30), iv(40, 50)}; !slices.Equal(u.intervals(), want) {
		t.Errorf("after cut(25): %v; want %v", u.intervals(), want)
	}
	if before := u.cut(0, nil); len(before) != 0 {
		t.Errorf("cut(0) = %v; want nothing", before)
	}
}

func iv(s, e int64) timeline.Interval { return timeline.Interval{Start: s, End: e} }

func TestBreakdownHandBuilt(t *testing.T) {
	tests := []struct {
		name        string
		evs         []timeline.Event
		want        []DeviceTime
		idleNs      int64
		overlapPool *float64
	}{
		{
			name: "kernel, overlapping send and a copy",
			evs: []timeline.Event{
				kern(0, 1, 0, 100),
				sendEv(0, 1, 50, 150, 10, 1),
				copyEv(timeline.CopyH2D, 0, timeline.NoDevice, 200, 250, 10),
			},
			// span 250; busy [0,150)+[200,250) = 200; compute 100; comm [50,150) = 100; overlap [50,100).
			want: []DeviceTime{{Device: 0, SpanNs: 250, BusyNs: 200, IdleNs: 50, ComputeNs: 100, NonCompNs: 100, CommNs: 100,
				OverlapNs: 50, IdlePct: 20, ComputePct: 40, NonCompPct: 40, OverlapPct: f64(50)}},
			idleNs: 50, overlapPool: f64(50),
		},
		{
			name: "no communication: overlap unknown",
			evs:  []timeline.Event{kern(1, 1, 0, 10), kern(1, 2, 5, 15), kern(1, 1, 20, 30)},
			want: []DeviceTime{{Device: 1, SpanNs: 30, BusyNs: 25, IdleNs: 5, ComputeNs: 25, NonCompNs: 0, CommNs: 0,
				OverlapNs: 0, IdlePct: 16.67, ComputePct: 83.33, NonCompPct: 0, OverlapPct: nil, IdleCause: "kernel_wait"}},
			idleNs: 5, overlapPool: nil,
		},
		{
			name: "pooled overlap weights by communication time",
			evs: []timeline.Event{
				kern(0, 1, 0, 100), collEv(timeline.CollAllReduce, 2, 0, 7, 50, 150, 8),
				collEv(timeline.CollAllReduce, 2, 1, 7, 0, 300, 8), kern(1, 1, 300, 400),
			},
			want: []DeviceTime{
				{Device: 0, SpanNs: 150, BusyNs: 150, IdleNs: 0, ComputeNs: 100, NonCompNs: 50, CommNs: 100, OverlapNs: 50,
					IdlePct: 0, ComputePct: 66.67, NonCompPct: 33.33, OverlapPct: f64(50)},
				{Device: 1, SpanNs: 400, BusyNs: 400, IdleNs: 0, ComputeNs: 100, NonCompNs: 300, CommNs: 300, OverlapNs: 0,
					IdlePct: 0, ComputePct: 25, NonCompPct: 75, OverlapPct: f64(0)},
			},
			idleNs: 0, overlapPool: f64(12.5), // 50 / (100 + 300)
		},
		{
			name: "recv counts as communication, copies do not",
			evs: []timeline.Event{
				kern(2, 1, 0, 100), recvEv(2, 0, 0, 40, 1, 1), copyEv(timeline.CopyP2P, 2, 3, 60, 100, 1),
			},
			want: []DeviceTime{{Device: 2, SpanNs: 100, BusyNs: 100, ComputeNs: 100, CommNs: 40, OverlapNs: 40,
				ComputePct: 100, OverlapPct: f64(100)}},
			overlapPool: f64(100),
		},
		{
			name: "ignored: host-only, waits, instants, zero-length ops",
			evs: []timeline.Event{
				kern(0, 1, 100, 200),
				kern(timeline.NoDevice, 1, 0, 1000),
				waitEv(timeline.KindEventWait, 0, 1, 0, 1000),
				waitEv(timeline.KindPeerWait, 0, 1, 0, 1000),
				barrierEv(0, 1, 1, 0, 1000),
				{Kind: timeline.KindStep, Device: 0, Start: 0, End: 1000},
				kern(0, 1, 500, 500),
				sendEv(0, 1, 900, 900, 1, 1),
			},
			want:        []DeviceTime{{Device: 0, SpanNs: 100, BusyNs: 100, ComputeNs: 100, ComputePct: 100}},
			overlapPool: nil,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := analyze(timeline.Meta{}, tc.evs...).Breakdown
			if len(b.Devices) != len(tc.want) {
				t.Fatalf("devices = %+v; want %d", b.Devices, len(tc.want))
			}
			for i, want := range tc.want {
				checkDeviceTime(t, b.Devices[i], want)
			}
			if b.IdleNs != tc.idleNs {
				t.Errorf("pooled IdleNs = %d; want %d", b.IdleNs, tc.idleNs)
			}
			eqPtrF(t, "pooled OverlapPct", b.OverlapPct, tc.overlapPool)
		})
	}
}

func checkDeviceTime(t *testing.T, got, want DeviceTime) {
	t.Helper()
	gp, wp := got.OverlapPct, want.OverlapPct
	got.OverlapPct, want.OverlapPct = nil, nil
	if got != want {
		t.Errorf("device %d:\n got %+v\nwant %+v", want.Device, got, want)
	}
	eqPtrF(t, "OverlapPct", gp, wp)
}

func TestBreakdownEmpty(t *testing.T) {
	b := analyze(timeline.Meta{}).Breakdown
	if b.Devices == nil || len(b.Devices) != 0 || b.IdleNs != 0 || b.OverlapPct != nil {
		t.Errorf("empty breakdown = %+v; want no devices, overlap nil", b)
	}
}

// refDeviceTimes is the temporal breakdown computed per nanosecond: each device's span is marked
// busy, compute and communication instant by instant, and counted. Times must be small.
func refDeviceTimes(evs []timeline.Event) map[int32]DeviceTime {
	type marks struct {
		busy, comp, comm []bool
		first, last      int64
	}
	per := map[int32]*marks{}
	var hi int64
	for _, e := range evs {
		hi = max(hi, e.End)
	}
	for _, e := range evs {
		if !e.Kind.IsBusy() || e.Device < 0 || e.End <= e.Start {
			continue
		}
		m := per[e.Device]
		if m == nil {
			m = &marks{busy: make([]bool, hi), comp: make([]bool, hi), comm: make([]bool, hi), first: e.Start, last: e.End}
			per[e.Device] = m
		}
		m.first, m.last = min(m.first, e.Start), max(m.last, e.End)
		for t := e.Start; t < e.End; t++ {
			m.busy[t] = true
			if e.Kind == timeline.KindKernel {
				m.comp[t] = true
			}
			if e.Kind == timeline.KindSend || e.Kind == timeline.KindRecv || e.Kind == timeline.KindCollective {
				m.comm[t] = true
			}
		}
	}
	out := map[int32]DeviceTime{}
	for dev, m := range per {
		d := DeviceTime{Device: dev, SpanNs: m.last - m.first}
		for t := range hi {
			if m.busy[t] {
				d.BusyNs++
			}
			if m.comp[t] {
				d.ComputeNs++
			}
			if m.comm[t] {
				d.CommNs++
			}
			if m.comp[t] && m.comm[t] {
				d.OverlapNs++
			}
		}
		d.IdleNs, d.NonCompNs = d.SpanNs-d.BusyNs, d.BusyNs-d.ComputeNs
		out[dev] = d
	}
	return out
}

// refSweep is the temporal breakdown by a sweep over the ops' boundaries: between two consecutive
// boundaries the number of running ops of each class is constant. Works at any time scale.
func refSweep(evs []timeline.Event) map[int32]DeviceTime {
	type edge struct {
		t                int64
		busy, comp, comm int
	}
	per := map[int32][]edge{}
	first, last := map[int32]int64{}, map[int32]int64{}
	for _, e := range evs {
		if !e.Kind.IsBusy() || e.Device < 0 || e.End <= e.Start {
			continue
		}
		c, m := 0, 0
		if e.Kind == timeline.KindKernel {
			c = 1
		}
		if e.Kind == timeline.KindSend || e.Kind == timeline.KindRecv || e.Kind == timeline.KindCollective {
			m = 1
		}
		per[e.Device] = append(per[e.Device], edge{e.Start, 1, c, m}, edge{e.End, -1, -c, -m})
		if f, ok := first[e.Device]; !ok || e.Start < f {
			first[e.Device] = e.Start
		}
		last[e.Device] = max(last[e.Device], e.End)
	}
	out := map[int32]DeviceTime{}
	for dev, es := range per {
		slices.SortFunc(es, func(a, b edge) int { return cmp.Compare(a.t, b.t) })
		d := DeviceTime{Device: dev, SpanNs: last[dev] - first[dev]}
		var busy, comp, comm int
		for i, e := range es {
			if i > 0 {
				dt := e.t - es[i-1].t
				if busy > 0 {
					d.BusyNs += dt
				}
				if comp > 0 {
					d.ComputeNs += dt
				}
				if comm > 0 {
					d.CommNs += dt
				}
				if comp > 0 && comm > 0 {
					d.OverlapNs += dt
				}
			}
			busy, comp, comm = busy+e.busy, comp+e.comp, comm+e.comm
		}
		d.IdleNs, d.NonCompNs = d.SpanNs-d.BusyNs, d.BusyNs-d.ComputeNs
		out[dev] = d
	}
	return out
}

var busyKinds = []timeline.Kind{timeline.KindKernel, timeline.KindKernel, timeline.KindSend, timeline.KindRecv,
	timeline.KindCollective, timeline.KindMemcpy}

// randomOps makes n busy ops per device on devs devices with starts increasing by up to step and
// durations up to maxDur (occasionally a long one), all times × scale, in start order.
func randomOps(r *rand.Rand, devs, n int, step, maxDur, scale int64) []timeline.Event {
	var evs []timeline.Event
	for d := range devs {
		var t int64
		for range n {
			t += r.Int64N(step + 1)
			dur := 1 + r.Int64N(maxDur)
			if r.IntN(50) == 0 {
				dur *= 20
			}
			evs = append(evs, busy(busyKinds[r.IntN(len(busyKinds))], int32(d), uint32(1+r.IntN(3)), t*scale, (t+dur)*scale))
		}
	}
	slices.SortStableFunc(evs, func(a, b timeline.Event) int { return cmp.Compare(a.Start, b.Start) })
	return evs
}

func compareWithRef(t *testing.T, ref map[int32]DeviceTime, b Breakdown) {
	t.Helper()
	if len(b.Devices) != len(ref) {
		t.Fatalf("%d devices; want %d", len(b.Devices), len(ref))
	}
	var comm, ov, idle int64
	for _, got := range b.Devices {
		want := ref[got.Device]
		if got.SpanNs != want.SpanNs || got.BusyNs != want.BusyNs || got.IdleNs != want.IdleNs || got.ComputeNs != want.ComputeNs ||
			got.NonCompNs != want.NonCompNs || got.CommNs != want.CommNs || got.OverlapNs != want.OverlapNs || got.LateNs != 0 {
			g := got
			g.IdlePct, g.ComputePct, g.NonCompPct, g.OverlapPct = 0, 0, 0, nil
			t.Errorf("device %d (ns):\n got %+v\nwant %+v", got.Device, g, want)
		}
		if want.SpanNs > 0 {
			if got.IdlePct != round2(100*float64(want.IdleNs)/float64(want.SpanNs)) ||
				got.ComputePct != round2(100*float64(want.ComputeNs)/float64(want.SpanNs)) ||
				got.NonCompPct != round2(100*float64(want.NonCompNs)/float64(want.SpanNs)) {
				t.Errorf("device %d: percentages %v, %v, %v", got.Device, got.IdlePct, got.ComputePct, got.NonCompPct)
			}
		}
		if want.CommNs > 0 {
			eqPtrF(t, "OverlapPct", got.OverlapPct, f64(round2(100*float64(want.OverlapNs)/float64(want.CommNs))))
		} else if got.OverlapPct != nil {
			t.Errorf("device %d: OverlapPct = %v without communication; want nil", got.Device, *got.OverlapPct)
		}
		comm, ov, idle = comm+want.CommNs, ov+want.OverlapNs, idle+want.IdleNs
	}
	if b.IdleNs != idle {
		t.Errorf("pooled IdleNs = %d; want %d", b.IdleNs, idle)
	}
	if comm > 0 {
		eqPtrF(t, "pooled OverlapPct", b.OverlapPct, f64(round2(100*float64(ov)/float64(comm))))
	} else if b.OverlapPct != nil {
		t.Errorf("pooled OverlapPct = %v; want nil", *b.OverlapPct)
	}
}

// Few ops (no commit can happen): exact whatever the arrival order. The two references agree.
func TestBreakdownRandomAnyOrder(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 7))
		evs := randomOps(r, 1+r.IntN(3), 1+r.IntN(60), 30, 40, 1)
		r.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
		perNs, sweep := refDeviceTimes(evs), refSweep(evs)
		for dev, d := range perNs {
			if sweep[dev] != d {
				t.Fatalf("seed %d: references disagree on device %d: %+v and %+v", seed, dev, d, sweep[dev])
			}
		}
		compareWithRef(t, perNs, analyze(timeline.Meta{}, evs...).Breakdown)
		if t.Failed() {
			t.Fatalf("seed %d", seed)
		}
	}
}

// committed reports whether any device committed part of its sets, and checks the sets' bound.
func committed(t *testing.T, a *Analyzer) bool {
	t.Helper()
	n := 0
	for _, d := range a.breakdown.devs {
		if d.busyNs+d.compNs+d.commNs > 0 {
			n++
		}
		for _, u := range []*intervalSet{&d.busy, &d.comp, &d.comm} {
			if len(u.intervals()) > maxIntervals {
				t.Errorf("a set holds %d intervals; bound is %d", len(u.intervals()), maxIntervals)
			}
		}
	}
	return n > 0
}

// Many more disjoint intervals than maxIntervals, in start order, over seconds: the sets commit
// their older parts and the figures stay exact, with no late time.
func TestBreakdownRandomCommitsStayExact(t *testing.T) {
	for seed := range uint64(6) {
		r := rand.New(rand.NewPCG(seed, 11))
		evs := randomOps(r, 2, 6*maxIntervals, 40, 30, 100_000)
		a := fold(timeline.Meta{}, evs)
		compareWithRef(t, refSweep(evs), a.Result(nil).Breakdown)
		if !committed(t, a) {
			t.Fatalf("seed %d: nothing committed: the test does not exercise commits", seed)
		}
		if t.Failed() {
			t.Fatalf("seed %d", seed)
		}
	}
}

// Disjoint kernels in time order (one every 20 ms, over 100 s) force commits; still exact.
func TestBreakdownDisjointIntervalsInOrder(t *testing.T) {
	const n, ms = 5 * maxIntervals, 1_000_000
	var evs []timeline.Event
	for i := range int64(n) {
		evs = append(evs, kern(0, 1, 20*ms*i, 20*ms*i+10*ms))
		if i%3 == 0 {
			evs = append(evs, sendEv(0, 1, 20*ms*i+5*ms, 20*ms*i+15*ms, 1, uint64(i)))
		}
	}
	a := fold(timeline.Meta{}, evs)
	if !committed(t, a) {
		t.Fatal("no commit happened")
	}
	compareWithRef(t, refSweep(evs), a.Result(nil).Breakdown)
}

// An op that arrives after a commit and starts before the cut counts only from the cut; the part
// before is reported as LateNs.
func TestBreakdownLateArrival(t *testing.T) {
	const ms = 1_000_000
	var evs []timeline.Event
	a := New(timeline.Meta{})
	for i := int64(0); i < 1_000_000; i++ { // disjoint kernels, until the device commits past 100 ms
		e := kern(0, 1, 20*ms*i, 20*ms*i+10*ms)
		evs = append(evs, e)
		a.Emit(&e)
		if a.breakdown.devs[0].cutAt > 100*ms {
			break
		}
	}
	cut := a.breakdown.devs[0].cutAt
	if cut <= 100*ms {
		t.Fatalf("cut at %d; the test needs a commit past 100 ms", cut)
	}
	end := evs[len(evs)-1].End
	late := []timeline.Event{
		kern(0, 2, 10*ms, 15*ms),             // entirely before the cut, in a gap: 5 ms late, not busy
		sendEv(0, 1, 40*ms, 45*ms, 1, 1),     // before the cut, inside a committed kernel: 5 ms late
		kern(0, 2, cut-5*ms, cut+1),          // straddles the cut: 5 ms late, [cut, cut+1) counted
		sendEv(0, 1, end+ms, end+2*ms, 1, 2), // after everything: on time
	}
	for i := range late {
		a.Emit(&late[i])
	}
	got := a.Result(nil).Breakdown.Devices[0]
	if got.LateNs != 15*ms {
		t.Errorf("LateNs = %d; want %d", got.LateNs, 15*ms)
	}
	// Everything on time is exact: the reference over the events clipped at the cut.
	clipped := slices.Clone(evs)
	for _, e := range late {
		e.Start = max(e.Start, cut)
		if e.End > e.Start {
			clipped = append(clipped, e)
		}
	}
	want := refSweep(clipped)[0]
	want.SpanNs = end + 2*ms // the span still starts at the first op
	want.IdleNs = want.SpanNs - want.BusyNs
	if got.BusyNs != want.BusyNs || got.ComputeNs != want.ComputeNs || got.CommNs != want.CommNs || got.OverlapNs != want.OverlapNs ||
		got.SpanNs != want.SpanNs || got.IdleNs != want.IdleNs {
		t.Errorf("after late ops:\n got %+v\nwant %+v", got, want)
	}
}

// Producers emit an op when it completes (the simulator's finish emits at the op's end), so a
// device's ops reach the analysis in end order: a long op arrives after every short op it covers.
// Here a 41 µs kernel covers 2048 short sends; the breakdown must stay exact.
func TestBreakdownEndOrderedArrival(t *testing.T) {
	var evs []timeline.Event
	for i := range int64(2 * maxIntervals) {
		evs = append(evs, sendEv(0, 1, 100+20*i, 110+20*i, 1, uint64(i+1)))
	}
	evs = append(evs, kern(0, 1, 0, 100+20*2*maxIntervals+50)) // ends last, so it is emitted last
	compareWithRef(t, refSweep(evs), analyze(timeline.Meta{}, evs...).Breakdown)
}

// Times before the epoch (imported traces may have them) are not late: nothing was committed yet.
func TestBreakdownNegativeTimes(t *testing.T) {
	evs := []timeline.Event{kern(0, 1, -100, -50), sendEv(0, 1, -80, 20, 1, 1)}
	compareWithRef(t, refSweep(evs), analyze(timeline.Meta{}, evs...).Breakdown)
}

// The lengths and the overlap a device keeps as ops arrive (so that a result need not walk its
// intervals) equal what walking them gives, after every add and every commit, in any arrival
// order.
func TestDeviceTimeKeptTotalsMatchIntervals(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 3))
		d := &deviceTime{limit: 8} // commit often
		d.cutAt = -1 << 62
		for i := range 3000 {
			s := r.Int64N(200_000)
			if r.IntN(3) > 0 {
				s = int64(i)*60 + r.Int64N(100) // mostly in time order, as producers emit
			}
			e := &timeline.Event{Kind: timeline.KindKernel, Start: s, End: s + 1 + r.Int64N(300)}
			if r.IntN(2) == 0 {
				e.Kind = timeline.KindCollective
			}
			d.add(e)
			for name, u := range map[string]*intervalSet{"busy": &d.busy, "comp": &d.comp, "comm": &d.comm} {
				if got, want := u.length(), timeline.Length(u.intervals()); got != want {
					t.Fatalf("seed %d, add %d: %s length kept %d; its intervals sum to %d", seed, i, name, got, want)
				}
			}
			if got, want := d.liveOverlapNs, timeline.IntersectLength(d.comp.intervals(), d.comm.intervals()); got != want {
				t.Fatalf("seed %d, add %d: overlap kept %d; the intervals intersect over %d", seed, i, got, want)
			}
		}
	}
}

// A console asks for the breakdown after every fold; what it shows at the end is what the report
// shows after one fold of everything. A failed send that ran for no time (the watchdog's, at the end
// of a deadlock) still stretches its device's span: a result cached before it must not survive it.
func TestBreakdownAskedBetweenOpsEqualsOnce(t *testing.T) {
	failed := sendEv(0, 1, 2_920, 2_920, 16, 1)
	failed.Status = timeline.StatusTimeout
	runs := map[string][]timeline.Event{
		"deadlock: a failed send after compute": {kern(0, 1, 0, 1), kern(1, 1, 0, 1), failed},
		"an op that starts before the first":    {kern(0, 1, 100, 200), kern(0, 2, 50, 60)},
	}
	for name, evs := range runs {
		t.Run(name, func(t *testing.T) {
			want := analyze(timeline.Meta{}, evs...).Breakdown
			a := New(timeline.Meta{})
			for i := range evs {
				a.Emit(&evs[i])
				a.Result(timeline.NewStrings())
			}
			got := a.Result(timeline.NewStrings()).Breakdown
			if len(got.Devices) != len(want.Devices) {
				t.Fatalf("devices = %+v; want %+v", got.Devices, want.Devices)
			}
			for i := range want.Devices {
				checkDeviceTime(t, got.Devices[i], want.Devices[i])
			}
		})
	}
}

// TestIdleCauseOnlyWhereIdle: a device's idle cause is the top cause of its streams' gaps, given
// only where the device itself sat idle. Device 0's stream 2 has a long gap while stream 1 runs:
// the device was never idle, and has no idle cause (its streams' gaps still count theirs).
// Device 1's only stream has the same gap: the device was idle, for that cause (a gap below 30 µs: kernel wait).
func TestIdleCauseOnlyWhereIdle(t *testing.T) {
	a := New(timeline.Meta{Backend: "sim", Devices: 2})
	for _, e := range []timeline.Event{
		kern(0, 1, 0, 1000), kern(0, 2, 0, 100), kern(0, 2, 900, 1000),
		kern(1, 1, 0, 100), kern(1, 1, 900, 1000),
	} {
		a.Emit(&e)
	}
	r := a.Result(nil)
	if len(r.Breakdown.Devices) != 2 || len(r.StreamIdle.Devices) != 2 {
		t.Fatalf("breakdown %+v, gaps %+v", r.Breakdown.Devices, r.StreamIdle.Devices)
	}
	for i, want := range []struct {
		idle  int64
		cause string
	}{{0, ""}, {800, "kernel_wait"}} {
		d := r.Breakdown.Devices[i]
		if d.IdleNs != want.idle || d.IdleCause != want.cause {
			t.Errorf("device %d: idle %d ns, cause %q; want %d, %q", d.Device, d.IdleNs, d.IdleCause, want.idle, want.cause)
		}
		if g := r.StreamIdle.Devices[i]; g.TotalNs != 800 || g.TopCause != "kernel_wait" {
			t.Errorf("device %d's streams' gaps: %+v; want 800 ns of kernel_wait", g.Device, g)
		}
	}
}

// A device's state is laid out by what an op touches (deviceTime): its fields and its three sets
// in the first four cache lines, which the analyzer asks for ahead, and a state takes whole
// lines, so that each starts a line of its own.
func TestDeviceTimeLayout(t *testing.T) {
	var d deviceTime
	if n := unsafe.Sizeof(d); n%64 != 0 {
		t.Errorf("a device's state is %d bytes; want a multiple of 64", n)
	}
	if end := unsafe.Offsetof(d.busy) + unsafe.Sizeof(d.busy); end > deviceLines*64 || unsafe.Offsetof(d.queued) >= 64 {
		t.Errorf("an op's fields end at %d and its sets at %d; want 64 and %d at most", unsafe.Offsetof(d.queued)+1, end, deviceLines*64)
	}
	var b breakdown
	for dev := range int32(64) {
		e := kern(dev, 1, 0, us)
		b.add(&e)
	}
	for dev, d := range b.devs {
		if p := uintptr(unsafe.Pointer(d)); p%64 != 0 {
			t.Errorf("device %d's state starts at %#x; want a cache line's start", dev, p)
		}
	}
}

// TestBreakdownManyDevices: every device is counted whole, whatever its id: a 100,000-GPU job
// (ids 0..99,999) beside 100,000 sparse ids up to int32, one kernel each, has a row per device,
// by id, each with its kernel's time, and so has the link table.
func TestBreakdownManyDevices(t *testing.T) {
	const dense, sparse = 100_000, 100_000
	var ids []int32
	for i := range int32(dense) {
		ids = append(ids, i)
	}
	for i := range int32(sparse) {
		ids = append(ids, dense+i*21_473) // up to 2,147,178,527: near int32's top
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	evs := make([]timeline.Event, len(ids))
	for i, d := range ids {
		evs[i] = timeline.Event{Kind: timeline.KindKernel, Device: d, Stream: 7, Start: 1, End: 1001}
	}
	res := analyze(timeline.Meta{}, evs...)
	b, l := res.Breakdown, res.Links
	if len(b.Devices) != len(ids) || len(l.Devices) != len(ids) {
		t.Fatalf("%d breakdown rows, %d link rows; want %d of each", len(b.Devices), len(l.Devices), len(ids))
	}
	slices.Sort(ids)
	for i, want := range ids {
		if d := b.Devices[i]; d.Device != want || d.BusyNs != 1000 {
			t.Fatalf("breakdown row %d: device %d busy %d ns; want device %d busy 1000 ns", i, d.Device, d.BusyNs, want)
		}
		if d := l.Devices[i]; d.Device != want || !d.Partial[LinkHBM] {
			t.Fatalf("link row %d: device %d (HBM partial %v); want device %d, HBM partial (a kernel's traffic)", i, d.Device, d.Partial[LinkHBM], want)
		}
	}
}

// TestFarDevicesSparse: devices 4464 and 70000 each have a row in the breakdown and the link
// table, with its own time, bytes and link history.
func TestFarDevicesSparse(t *testing.T) {
	evs := []timeline.Event{
		{Kind: timeline.KindKernel, Device: 70000, Stream: 7, Start: 1, End: 1_000_001},
		{Kind: timeline.KindKernel, Device: 4464, Stream: 7, Start: 1, End: 5001},
		{Kind: timeline.KindMemcpy, Sub: uint8(timeline.CopyH2D), Device: 70000, Peer: timeline.NoDevice, Stream: 8, Start: 2, End: 3, Bytes: 4096},
	}
	res := analyze(timeline.Meta{}, evs...)
	var got []string
	for _, d := range res.Breakdown.Devices {
		got = append(got, fmt.Sprintf("%d:%d", d.Device, d.BusyNs))
	}
	if want := []string{"4464:5000", "70000:1000000"}; !slices.Equal(got, want) {
		t.Errorf("breakdown rows (device:busy ns) %v; want %v", got, want)
	}
	// The link rows below MaxDevices are by id (a console indexes them so), the others follow.
	got = got[:0]
	devs := res.Links.Devices
	for _, d := range devs[min(4464, len(devs)):] {
		got = append(got, fmt.Sprintf("%d:%d", d.Device, d.PCIe))
	}
	if want := []string{"4464:0", "70000:4096"}; len(devs) != 4466 || !slices.Equal(got, want) {
		t.Errorf("%d link rows, from device 4464 (device:PCIe bytes) %v; want 4466, %v", len(devs), got, want)
	}
	if n := len(devs); n == 4466 {
		if r, ok := devs[n-1].Rate(LinkPCIe, 0); !ok || r <= 0 {
			t.Errorf("device 70000's PCIe rate in bucket 0 = %v (%v); want its copy's bytes", r, ok)
		}
	}
}
