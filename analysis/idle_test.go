package analysis

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/xfertop/xfertop/timeline"
)

// causes builds a by-cause map with every cause present (zero unless given).
func causes(kv map[Cause]int64) map[string]int64 {
	m := map[string]int64{}
	for _, c := range Causes() {
		m[c.String()] = kv[c]
	}
	return m
}

func TestCauseNames(t *testing.T) {
	want := []string{"host_wait", "kernel_wait", "event_wait", "barrier_wait", "peer_wait", "other"}
	var got []string
	for _, c := range Causes() {
		got = append(got, c.String())
	}
	if !slices.Equal(got, want) {
		t.Errorf("Causes() = %v; want %v", got, want)
	}
	if s := Cause(200).String(); s != "unknown" {
		t.Errorf("Cause(200) = %q; want unknown", s)
	}
	if DefaultKernelWaitNs != 30_000 {
		t.Errorf("DefaultKernelWaitNs = %d; want 30 µs (HTA's threshold in effect)", DefaultKernelWaitNs)
	}
}

func TestIdleEngineMode(t *testing.T) {
	k := func(s, e int64) timeline.Event { return kern(0, 1, s*us, e*us) }
	w := func(kind timeline.Kind, s, e int64) timeline.Event { return waitEv(kind, 0, 1, s*us, e*us) }
	tests := []struct {
		name  string
		meta  timeline.Meta
		evs   []timeline.Event
		want  map[Cause]int64 // µs
		top   []Gap           // µs, cause only (device 0, stream 1)
		total int64
	}{
		{
			name: "event wait splits a gap, the rest is other",
			evs:  []timeline.Event{k(0, 100), w(timeline.KindEventWait, 150, 250), k(300, 400)},
			want: map[Cause]int64{CauseEventWait: 100, CauseOther: 100},
			top:  []Gap{{Start: 150, Dur: 100, Cause: CauseEventWait}, {Start: 100, Dur: 50, Cause: CauseOther}, {Start: 250, Dur: 50, Cause: CauseOther}},
		},
		{
			name: "barrier then peer wait",
			evs:  []timeline.Event{k(0, 100), w(timeline.KindBarrier, 100, 160), w(timeline.KindPeerWait, 160, 200), k(200, 300)},
			want: map[Cause]int64{CauseBarrierWait: 60, CausePeerWait: 40},
		},
		{
			name: "host wait until the op was queued, then other",
			evs:  []timeline.Event{k(0, 100), withQueued(k(200, 300), 180*us)},
			want: map[Cause]int64{CauseHostWait: 80, CauseOther: 20},
			top:  []Gap{{Start: 100, Dur: 80, Cause: CauseHostWait}, {Start: 180, Dur: 20, Cause: CauseOther}},
		},
		{
			name: "queued before the gap: no host wait",
			evs:  []timeline.Event{k(0, 100), withQueued(k(200, 300), 50*us)},
			want: map[Cause]int64{CauseOther: 100},
		},
		{
			name: "inside one graph launch the host is not blamed, whatever the launch's time",
			evs:  []timeline.Event{captured(withQueued(k(0, 100), 150*us)), captured(withQueued(k(200, 300), 150*us))},
			want: map[Cause]int64{CauseOther: 100},
		},
		{
			name: "the first op of the next graph launch waits for the host",
			evs:  []timeline.Event{captured(withQueued(k(0, 100), 0)), captured(withQueued(k(200, 300), 180*us))},
			want: map[Cause]int64{CauseHostWait: 80, CauseOther: 20},
		},
		{
			name: "queued after the op started counts up to the start",
			evs:  []timeline.Event{k(0, 100), withQueued(k(200, 300), 250*us)},
			want: map[Cause]int64{CauseHostWait: 100},
		},
		{
			name: "short gap is kernel wait",
			evs:  []timeline.Event{k(0, 100), k(120, 200)},
			want: map[Cause]int64{CauseKernelWait: 20},
		},
		{
			name: "a gap of exactly the threshold is other",
			evs:  []timeline.Event{k(0, 100), k(130, 200)},
			want: map[Cause]int64{CauseOther: 30},
		},
		{
			name: "short gap: host wait, then kernel wait",
			evs:  []timeline.Event{k(0, 100), withQueued(k(120, 200), 110*us)},
			want: map[Cause]int64{CauseHostWait: 10, CauseKernelWait: 10},
		},
		{
			name: "short gap partly covered by a wait: the rest is kernel wait",
			evs:  []timeline.Event{k(0, 100), w(timeline.KindEventWait, 105, 115), k(120, 200)},
			want: map[Cause]int64{CauseEventWait: 10, CauseKernelWait: 10},
		},
		{
			name: "threshold from the meta",
			meta: timeline.Meta{KernelWaitNs: 50 * us},
			evs:  []timeline.Event{k(0, 100), k(140, 200), k(300, 400)},
			want: map[Cause]int64{CauseKernelWait: 40, CauseOther: 100},
		},
		{
			name: "host wait, a wait, then other",
			evs:  []timeline.Event{k(0, 100), w(timeline.KindEventWait, 120, 160), withQueued(k(200, 300), 140*us)},
			want: map[Cause]int64{CauseHostWait: 20, CauseEventWait: 40, CauseOther: 40},
		},
		{
			name: "overlapping waits: the earlier one first",
			evs:  []timeline.Event{k(0, 100), w(timeline.KindEventWait, 110, 170), w(timeline.KindBarrier, 150, 190), k(200, 300)},
			want: map[Cause]int64{CauseEventWait: 60, CauseBarrierWait: 20, CauseOther: 20},
		},
		{
			name: "waits arriving out of start order",
			evs:  []timeline.Event{k(0, 100), w(timeline.KindBarrier, 150, 190), w(timeline.KindEventWait, 110, 170), k(200, 300)},
			want: map[Cause]int64{CauseEventWait: 60, CauseBarrierWait: 20, CauseOther: 20},
		},
		{
			name: "wait before the gap and past it",
			evs:  []timeline.Event{k(0, 100), w(timeline.KindPeerWait, 50, 400), k(200, 300), k(500, 600)},
			want: map[Cause]int64{CausePeerWait: 200, CauseOther: 100},
		},
		{
			name: "wait that ended before the previous op ended is ignored",
			evs:  []timeline.Event{k(0, 100), w(timeline.KindEventWait, 20, 80), k(150, 200)},
			want: map[Cause]int64{CauseOther: 50},
		},
		{
			name: "before the first op only recorded waits are idle time",
			evs:  []timeline.Event{w(timeline.KindEventWait, 0, 50), k(80, 100), k(200, 300)},
			want: map[Cause]int64{CauseEventWait: 50, CauseOther: 100},
		},
		{
			name: "a wait before the first op counts up to its start",
			evs:  []timeline.Event{w(timeline.KindPeerWait, 0, 150), k(100, 120), k(200, 300)},
			want: map[Cause]int64{CausePeerWait: 100 + 30, CauseOther: 50},
		},
		{
			name: "overlapping waits before the first op are not counted twice",
			evs:  []timeline.Event{w(timeline.KindEventWait, 0, 50), w(timeline.KindBarrier, 20, 80), k(100, 200)},
			want: map[Cause]int64{CauseEventWait: 50, CauseBarrierWait: 30},
		},
		{
			name: "overlapping ops: the gap starts at the latest end",
			evs:  []timeline.Event{k(0, 300), k(50, 100), k(400, 500)},
			want: map[Cause]int64{CauseOther: 100},
		},
		{
			name: "one op: no gap",
			evs:  []timeline.Event{k(0, 300), w(timeline.KindEventWait, 300, 400)},
			want: map[Cause]int64{},
		},
		{
			name: "instant and non-busy events do not end a gap",
			evs: []timeline.Event{k(0, 100), {Kind: timeline.KindEventRecord, Device: 0, Stream: 1, Start: 150 * us, End: 150 * us},
				{Kind: timeline.KindMark, Device: 0, Stream: 1, Start: 120 * us, End: 180 * us}, k(200, 300)},
			want: map[Cause]int64{CauseOther: 100},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := analyze(tc.meta, tc.evs...).StreamIdle
			want := map[Cause]int64{}
			var total int64
			for c, v := range tc.want {
				want[c] = v * us
				total += v * us
			}
			if !mapsEqual(g.ByCause, causes(want)) || g.TotalNs != total {
				t.Errorf("by cause = %v, total %d; want %v, total %d", g.ByCause, g.TotalNs, causes(want), total)
			}
			if len(g.Streams) != 1 || g.Streams[0].Device != 0 || g.Streams[0].Stream != 1 || !mapsEqual(g.Streams[0].ByCause.Map(), g.ByCause) ||
				g.Streams[0].TotalNs != total {
				t.Errorf("streams = %+v; want one, stream 1 of device 0, with the totals", g.Streams)
			}
			if tc.top != nil {
				var wantTop []Gap
				for _, x := range tc.top {
					wantTop = append(wantTop, Gap{Device: 0, Stream: 1, Start: x.Start * us, Dur: x.Dur * us, Cause: x.Cause, CauseName: x.Cause.String()})
				}
				if !slices.Equal(g.TopGaps, wantTop) {
					t.Errorf("top gaps = %+v; want %+v", g.TopGaps, wantTop)
				}
			}
			if g.Reordered != 0 {
				t.Errorf("Reordered = %d; want 0", g.Reordered)
			}
		})
	}
}

// causeMap is v keyed by the causes' report keys, and its total.
func causeMap(v *[causeCount]int64) (map[string]int64, int64) {
	c := CauseNs(*v)
	return c.Map(), c.Total()
}

func mapsEqual(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestIdleHTAMode(t *testing.T) {
	hta := timeline.Meta{IdleMode: timeline.IdleHTA}
	k := func(s, e int64) timeline.Event { return kern(0, 1, s*us, e*us) }
	tests := []struct {
		name string
		evs  []timeline.Event
		want map[Cause]int64 // µs
		top  []Gap           // µs
	}{
		{
			name: "long gap is other",
			evs:  []timeline.Event{k(0, 100), k(150, 200)},
			want: map[Cause]int64{CauseOther: 50},
			top:  []Gap{{Start: 100, Dur: 50, Cause: CauseOther}},
		},
		{
			name: "short gap is kernel wait",
			evs:  []timeline.Event{k(0, 100), k(110, 200)},
			want: map[Cause]int64{CauseKernelWait: 10},
		},
		{
			name: "launched after the previous op ended: the whole gap is host wait",
			evs:  []timeline.Event{k(0, 100), withQueued(k(200, 300), 150*us)},
			want: map[Cause]int64{CauseHostWait: 100},
		},
		{
			name: "host wait wins over kernel wait",
			evs:  []timeline.Event{k(0, 100), withQueued(k(110, 300), 105*us)},
			want: map[Cause]int64{CauseHostWait: 10},
		},
		{
			name: "one graph launch: no host wait",
			evs:  []timeline.Event{captured(withQueued(k(0, 100), 150*us)), captured(withQueued(k(110, 300), 150*us))},
			want: map[Cause]int64{CauseKernelWait: 10},
		},
		{
			name: "ops launched on their own after a graph's: host wait",
			evs:  []timeline.Event{captured(withQueued(k(0, 100), 150*us)), withQueued(k(200, 300), 150*us)},
			want: map[Cause]int64{CauseHostWait: 100},
		},
		{
			name: "launched before the previous op ended",
			evs:  []timeline.Event{k(0, 100), withQueued(k(200, 300), 100*us)},
			want: map[Cause]int64{CauseOther: 100},
		},
		// Overlapping ops on a stream: HTA subtracts the end of the op started just before and
		// sums the (negative) differences; idle time is never negative, so here a gap runs from
		// the latest end so far, and overlapping ops have none. HTA's figure is in each name.
		{
			name: "overlap: no gap (HTA: -20 kernel wait)",
			evs:  []timeline.Event{k(0, 100), k(80, 150)},
			want: map[Cause]int64{},
			top:  []Gap{},
		},
		{
			name: "overlap launched late: no gap, not negative host wait (HTA: -20 host wait)",
			evs:  []timeline.Event{k(0, 100), withQueued(k(80, 150), 120*us)},
			want: map[Cause]int64{},
			top:  []Gap{},
		},
		{
			name: "overlap by more than the threshold: no gap (HTA: -60 kernel wait)",
			evs:  []timeline.Event{k(0, 100), k(40, 150)},
			want: map[Cause]int64{},
			top:  []Gap{},
		},
		{
			name: "same start: no gap (HTA: -100 kernel wait)",
			evs:  []timeline.Event{k(0, 100), k(0, 50)},
			want: map[Cause]int64{},
			top:  []Gap{},
		},
		{
			name: "an op inside a longer one: the gap starts at the latest end (HTA: -250 kernel wait, 300 other)",
			evs:  []timeline.Event{k(0, 300), k(50, 100), k(400, 500)},
			want: map[Cause]int64{CauseOther: 100},
			top:  []Gap{{Start: 300, Dur: 100, Cause: CauseOther}},
		},
		{
			name: "a short gap after a nested op is kernel wait from the latest end (HTA: -250, 220 other)",
			evs:  []timeline.Event{k(0, 300), k(50, 100), k(320, 400)},
			want: map[Cause]int64{CauseKernelWait: 20},
		},
		{
			name: "an op covered by the one before: host wait judged against the latest end (HTA: -250, 210 host wait)",
			evs:  []timeline.Event{k(0, 300), k(50, 100), withQueued(k(310, 400), 200*us)},
			want: map[Cause]int64{CauseKernelWait: 10},
		},
		{
			name: "launched after the latest end: host wait",
			evs:  []timeline.Event{k(0, 300), k(50, 100), withQueued(k(400, 500), 350*us)},
			want: map[Cause]int64{CauseHostWait: 100},
		},
		{
			name: "a chain of overlaps, then a gap (HTA: -10, -10, 50 other)",
			evs:  []timeline.Event{k(0, 100), k(90, 200), k(190, 300), k(350, 400)},
			want: map[Cause]int64{CauseOther: 50},
			top:  []Gap{{Start: 300, Dur: 50, Cause: CauseOther}},
		},
		{
			name: "back to back: no gap",
			evs:  []timeline.Event{k(0, 100), k(100, 200)},
			want: map[Cause]int64{},
			top:  []Gap{},
		},
		{
			name: "wait events are not used",
			evs:  []timeline.Event{k(0, 100), waitEv(timeline.KindEventWait, 0, 1, 100*us, 200*us), k(200, 300)},
			want: map[Cause]int64{CauseOther: 100},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := analyze(hta, tc.evs...).StreamIdle
			want := map[Cause]int64{}
			var total int64
			for c, v := range tc.want {
				want[c] = v * us
				total += v * us
			}
			if !mapsEqual(g.ByCause, causes(want)) || g.TotalNs != total {
				t.Errorf("by cause = %v, total %d; want %v, total %d", g.ByCause, g.TotalNs, causes(want), total)
			}
			if tc.top != nil {
				wantTop := []Gap{}
				for _, x := range tc.top {
					wantTop = append(wantTop, Gap{Device: 0, Stream: 1, Start: x.Start * us, Dur: x.Dur * us, Cause: x.Cause, CauseName: x.Cause.String()})
				}
				if !slices.Equal(g.TopGaps, wantTop) {
					t.Errorf("top gaps = %+v; want %+v", g.TopGaps, wantTop)
				}
			}
		})
	}
}

func TestIdleStreamsKeptApart(t *testing.T) {
	evs := []timeline.Event{
		kern(0, 1, 0, 100*us), kern(0, 2, 0, 50*us), kern(1, 1, 0, 10*us),
		kern(0, 2, 60*us, 70*us),     // stream 2: 10 µs kernel wait
		kern(0, 1, 200*us, 300*us),   // stream 1: 100 µs other
		kern(1, 1, 20*us, 30*us),     // device 1 stream 1: 10 µs kernel wait
		kern(0, 0, 1000*us, 2000*us), // stream 0: not a stream, ignored
		kern(0, 0, 5000*us, 6000*us), // ignored
		{Kind: timeline.KindKernel, Device: 0, Stream: 3, Priority: -1, Start: 0, End: 1}, // a stream with one op: no gap
	}
	g := analyze(timeline.Meta{}, evs...).StreamIdle
	type row struct {
		dev    int32
		stream uint32
		prio   int8
		total  int64
	}
	var got []row
	for _, s := range g.Streams {
		got = append(got, row{s.Device, s.Stream, s.Priority, s.TotalNs})
	}
	want := []row{{0, 1, 0, 100 * us}, {0, 2, 0, 10 * us}, {0, 3, -1, 0}, {1, 1, 0, 10 * us}}
	if !slices.Equal(got, want) {
		t.Errorf("streams = %+v; want %+v", got, want)
	}
	if !mapsEqual(g.ByCause, causes(map[Cause]int64{CauseKernelWait: 20 * us, CauseOther: 100 * us})) || g.TotalNs != 120*us {
		t.Errorf("by cause = %v, total %d", g.ByCause, g.TotalNs)
	}
}

// A device with more streams than are looked up per device (devStreams), and a negative device,
// still keep every stream's gaps apart: the streams past the first few are found through the
// cache and the map, interleaved with the others.
func TestIdleManyStreamsPerDevice(t *testing.T) {
	const n = 3 * devStreams
	var evs []timeline.Event
	for round := range int64(2) {
		for s := range uint32(n) {
			start := round * 1000 * us // stream s idles (s+1) µs before its second op
			if round == 1 {
				start += int64(s+1) * us
			}
			evs = append(evs, kern(0, s+1, start, start+100*us))
			evs = append(evs, kern(-1, s+1, start, start+100*us))
		}
	}
	g := analyze(timeline.Meta{}, evs...).StreamIdle
	if len(g.Streams) != 2*n {
		t.Fatalf("%d streams; want %d", len(g.Streams), 2*n)
	}
	for _, st := range g.Streams {
		if want := 900*us + int64(st.Stream)*us; st.TotalNs != want {
			t.Errorf("device %d stream %d: %d ns idle; want %d", st.Device, st.Stream, st.TotalNs, want)
		}
	}
}

func TestIdleReordered(t *testing.T) {
	for _, mode := range []timeline.IdleMode{timeline.IdleEngine, timeline.IdleHTA} {
		t.Run(mode.String(), func(t *testing.T) {
			g := analyze(timeline.Meta{IdleMode: mode}, kern(0, 1, 100, 200), kern(0, 1, 300, 400), kern(0, 1, 0, 50)).StreamIdle
			if g.Reordered != 1 {
				t.Errorf("Reordered = %d; want 1", g.Reordered)
			}
		})
	}
}

// The top gaps are the TopGapsKept longest, longest first, ties by start.
func TestIdleTopGaps(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var evs []timeline.Event
	var gaps []Gap
	last := map[int32]int64{}
	for i := range 3 * TopGapsKept {
		dev := int32(i % 2)
		gap := (40 + int64(r.IntN(40))) * us
		if _, ok := last[dev]; !ok {
			evs = append(evs, kern(dev, 1, 0, 10*us))
			last[dev] = 10 * us
		}
		s := last[dev] + gap
		gaps = append(gaps, Gap{Device: dev, Stream: 1, Start: last[dev], Dur: gap, Cause: CauseOther, CauseName: "other"})
		evs = append(evs, kern(dev, 1, s, s+10*us))
		last[dev] = s + 10*us
	}
	slices.SortStableFunc(evs, func(a, b timeline.Event) int { return cmp.Compare(a.Start, b.Start) })
	slices.SortFunc(gaps, func(a, b Gap) int {
		if a.Dur != b.Dur {
			return cmp.Compare(b.Dur, a.Dur)
		}
		return cmp.Compare(a.Start, b.Start)
	})
	g := analyze(timeline.Meta{}, evs...).StreamIdle
	if !slices.Equal(g.TopGaps, gaps[:TopGapsKept]) {
		t.Errorf("top gaps:\n got %+v\nwant %+v", g.TopGaps, gaps[:TopGapsKept])
	}
}

// refIdle is a batch reference for the engine and HTA rules: each stream's ops and waits sorted by
// start; engine mode labels each nanosecond of each gap (the earliest-starting wait covering it, else
// host wait before the next op's launch, else kernel wait for a short gap, else other); HTA mode
// puts the nanoseconds no op covers between the first start and the last end down to the cause of
// the gap they lie in, judged as HTA does.
func refIdle(evs []timeline.Event, mode timeline.IdleMode, kw int64) map[streamKey]*[causeCount]int64 {
	type op struct{ s, e, q int64 }
	ops := map[streamKey][]op{}
	waits := map[streamKey][]waitIv{}
	for _, e := range evs {
		if e.Stream == 0 {
			continue
		}
		k := streamKey{e.Device, e.Stream}
		switch e.Kind {
		case timeline.KindKernel, timeline.KindMemcpy, timeline.KindSend, timeline.KindRecv, timeline.KindCollective:
			ops[k] = append(ops[k], op{e.Start, e.End, e.Queued})
		case timeline.KindEventWait:
			waits[k] = append(waits[k], waitIv{e.Start, e.End, CauseEventWait})
		case timeline.KindBarrier:
			waits[k] = append(waits[k], waitIv{e.Start, e.End, CauseBarrierWait})
		case timeline.KindPeerWait:
			waits[k] = append(waits[k], waitIv{e.Start, e.End, CausePeerWait})
		}
	}
	out := map[streamKey]*[causeCount]int64{}
	for k, os := range ops {
		sum := &[causeCount]int64{}
		out[k] = sum
		slices.SortStableFunc(os, func(a, b op) int { return cmp.Compare(a.s, b.s) })
		ws := waits[k]
		slices.SortStableFunc(ws, func(a, b waitIv) int { return cmp.Compare(a.start, b.start) })
		if mode == timeline.IdleHTA {
			// Each nanosecond from the first op's start to the last end that no op covers, put
			// down to the gap it lies in.
			end := os[0].e
			for _, o := range os[1:] {
				if o.s > end {
					idle := int64(0)
					for t := end; t < o.s; t++ {
						covered := false
						for _, p := range os {
							covered = covered || (p.s <= t && t < p.e)
						}
						if !covered {
							idle++
						}
					}
					switch {
					case o.q > end:
						sum[CauseHostWait] += idle
					case o.s-end < kw:
						sum[CauseKernelWait] += idle
					default:
						sum[CauseOther] += idle
					}
				}
				end = max(end, o.e)
			}
			continue
		}
		// Before the first op only the waits count, each instant once.
		if len(ws) > 0 {
			for t := ws[0].start; t < os[0].s; t++ {
				for _, w := range ws {
					if w.start <= t && t < w.end {
						sum[w.cause]++
						break
					}
				}
			}
		}
		prevEnd := os[0].e
		for _, o := range os[1:] {
			for t := prevEnd; t < o.s; t++ {
				c := Cause(255)
				for _, w := range ws {
					if w.start <= t && t < w.end {
						c = w.cause
						break
					}
				}
				switch {
				case c != 255:
				case t < o.q:
					c = CauseHostWait
				case o.s-prevEnd < kw:
					c = CauseKernelWait
				default:
					c = CauseOther
				}
				sum[c]++
			}
			prevEnd = max(prevEnd, o.e)
		}
	}
	return out
}

// randomStreams makes streams of ops separated by random gaps holding random waits (some
// overlapping each other or the ops around them) and random launch times, in start order. With
// endOrder, ops do not overlap, waits lie inside their gaps (as when a wait holds the stream) and
// events come in end order, as producers emit them when they complete.
func randomStreams(r *rand.Rand, kw int64, endOrder bool) []timeline.Event {
	var evs []timeline.Event
	waitKinds := []timeline.Kind{timeline.KindEventWait, timeline.KindBarrier, timeline.KindPeerWait}
	for s := range 1 + r.IntN(4) {
		dev, stream := int32(r.IntN(2)), uint32(s+1)
		var t int64
		for range 1 + r.IntN(25) {
			dur := 1 + r.Int64N(50)
			gap := r.Int64N(3 * kw)
			if r.IntN(6) == 0 {
				gap = 0
			}
			if r.IntN(10) == 0 && !endOrder {
				gap = -r.Int64N(dur) // overlaps the previous op (an imported trace)
			}
			for range r.IntN(4) {
				ws := t - 10 + r.Int64N(max(gap, 0)+20)
				we := ws + 1 + r.Int64N(max(gap, 1)+10)
				if endOrder {
					ws, we = min(max(ws, t), t+gap), min(we, t+gap)
				}
				if we > ws {
					evs = append(evs, waitEv(waitKinds[r.IntN(3)], dev, stream, ws, we))
				}
			}
			start := max(t+gap, 0)
			var q int64
			switch r.IntN(3) {
			case 1:
				q = start - r.Int64N(max(gap, 1)+5)
			case 2:
				q = start + r.Int64N(10)
			}
			evs = append(evs, withQueued(kern(dev, stream, start, start+dur), q))
			t = start + dur
		}
	}
	if endOrder {
		slices.SortStableFunc(evs, func(a, b timeline.Event) int { return cmp.Compare(a.End, b.End) })
	} else {
		slices.SortStableFunc(evs, func(a, b timeline.Event) int { return cmp.Compare(a.Start, b.Start) })
	}
	return evs
}

func TestIdleRandomAgainstReference(t *testing.T) {
	type variant struct {
		mode     timeline.IdleMode
		endOrder bool
	}
	for _, v := range []variant{{timeline.IdleEngine, false}, {timeline.IdleHTA, false}, {timeline.IdleEngine, true}, {timeline.IdleHTA, true}} {
		mode := v.mode
		name := mode.String() + "/start order"
		if v.endOrder {
			name = mode.String() + "/end order"
		}
		t.Run(name, func(t *testing.T) {
			const kw = 40
			var seen [causeCount]bool
			for seed := range uint64(500) {
				r := rand.New(rand.NewPCG(seed, 5))
				evs := randomStreams(r, kw, v.endOrder)
				g := analyze(timeline.Meta{IdleMode: mode, KernelWaitNs: kw}, evs...).StreamIdle
				ref := refIdle(evs, mode, kw)
				var total [causeCount]int64
				for _, s := range g.Streams {
					want := ref[streamKey{s.Device, s.Stream}]
					if want == nil {
						t.Fatalf("seed %d: stream %d/%d not in the reference", seed, s.Device, s.Stream)
					}
					m, sum := causeMap(want)
					if !mapsEqual(s.ByCause.Map(), m) || s.TotalNs != sum {
						t.Fatalf("seed %d: stream %d/%d by cause = %v (total %d); want %v (total %d)",
							seed, s.Device, s.Stream, s.ByCause, s.TotalNs, m, sum)
					}
					for _, c := range Causes() {
						if s.ByCause[c] < 0 {
							t.Fatalf("seed %d: stream %d/%d has %d ns of %s: idle time is never negative", seed, s.Device, s.Stream, s.ByCause[c], c)
						}
						total[c] += s.ByCause[c]
						seen[c] = seen[c] || s.ByCause[c] != 0
					}
				}
				if len(g.Streams) != len(ref) {
					t.Fatalf("seed %d: %d streams; want %d", seed, len(g.Streams), len(ref))
				}
				// Totals by cause are the sums over streams.
				m, sum := causeMap(&total)
				if !mapsEqual(g.ByCause, m) || g.TotalNs != sum {
					t.Fatalf("seed %d: totals %v (%d); per-stream sums %v (%d)", seed, g.ByCause, g.TotalNs, m, sum)
				}
				for i, gap := range g.TopGaps {
					if gap.Dur <= 0 || (i > 0 && (gap.Dur > g.TopGaps[i-1].Dur)) {
						t.Fatalf("seed %d: top gaps out of order or not positive: %+v", seed, g.TopGaps)
					}
				}
			}
			for _, c := range Causes() {
				if !seen[c] && (mode == timeline.IdleEngine || c == CauseHostWait || c == CauseKernelWait || c == CauseOther) {
					t.Errorf("no seed produced %s: the generator does not exercise it", c)
				}
			}
		})
	}
}

// A stream with many more pending waits than it keeps stays bounded.
func TestIdlePendingWaitsBounded(t *testing.T) {
	evs := []timeline.Event{kern(0, 1, 0, 10)}
	for i := range int64(10 * maxPendingWaits) {
		evs = append(evs, waitEv(timeline.KindEventWait, 0, 1, 100+i, 1_000_000))
	}
	a := fold(timeline.Meta{}, evs)
	if n := len(a.idle.streams[streamKey{0, 1}].waits); n > maxPendingWaits {
		t.Errorf("%d pending waits; bound is %d", n, maxPendingWaits)
	}
}

// Each device's gaps are the sums of its streams'; a stream that ran kernels is a compute stream.
func TestIdleDevicesAndRoles(t *testing.T) {
	cp := func(dev int32, stream uint32, s, e int64) timeline.Event {
		x := copyEv(timeline.CopyH2D, dev, timeline.NoDevice, s*us, e*us, 1)
		x.Stream = stream
		return x
	}
	evs := []timeline.Event{
		kern(0, 1, 0, 100*us), cp(0, 2, 0, 10), cp(0, 2, 20, 30), // stream 2: copies only, 10 µs kernel wait
		kern(0, 1, 200*us, 300*us),                // stream 1: 100 µs other
		cp(0, 3, 0, 10), kern(0, 3, 12*us, 20*us), // stream 3: copy then kernel: compute, 2 µs
		kern(1, 1, 0, 10*us), kern(1, 1, 20*us, 30*us), // device 1: 10 µs kernel wait
		cp(2, 1, 0, 10), // device 2: no gaps
	}
	g := analyze(timeline.Meta{}, evs...).StreamIdle
	roles := map[streamKey]string{}
	for _, s := range g.Streams {
		roles[streamKey{s.Device, s.Stream}] = s.Role
	}
	wantRoles := map[streamKey]string{{0, 1}: "compute", {0, 2}: "transfer", {0, 3}: "compute", {1, 1}: "compute", {2, 1}: "transfer"}
	if len(roles) != len(wantRoles) {
		t.Errorf("roles = %v; want %v", roles, wantRoles)
	}
	for k, w := range wantRoles {
		if roles[k] != w {
			t.Errorf("stream %d/%d role = %q; want %q", k.dev, k.stream, roles[k], w)
		}
	}
	type dev struct {
		dev   int32
		total int64
		top   string
	}
	var got []dev
	for _, d := range g.Devices {
		got = append(got, dev{d.Device, d.TotalNs, d.TopCause})
		var sum int64
		for _, v := range d.ByCause {
			sum += v
		}
		if sum != d.TotalNs {
			t.Errorf("device %d: by cause %v sums to %d; total %d", d.Device, d.ByCause, sum, d.TotalNs)
		}
	}
	want := []dev{{0, 112 * us, "other"}, {1, 10 * us, "kernel_wait"}, {2, 0, ""}}
	if !slices.Equal(got, want) {
		t.Errorf("devices = %+v; want %+v", got, want)
	}
	if c := g.Devices[0].ByCause; c[CauseKernelWait] != 12*us || c[CauseOther] != 100*us {
		t.Errorf("device 0 by cause = %v; want 12 µs kernel wait, 100 µs other", c)
	}
}

// A stream's gaps are its own whatever its device's id: ids found by their id (idleStreams.byID)
// or their device's place (idleStreams.dir), past MaxDevices and without a device (through the
// map), interleaved, give each stream the gaps it would have alone.
func TestIdleStreamsByDevice(t *testing.T) {
	devs := []int32{0, 3, MaxDevices + 7, timeline.NoDevice}
	g := newIdleGaps(timeline.IdleEngine, 0)
	for i := range int64(4) {
		for j, d := range devs {
			for stream := uint32(1); stream <= 2; stream++ {
				gap := int64(j+1) * int64(stream) * us // each stream its own gap
				e := kern(d, stream, i*100*us+gap*i, i*100*us+gap*i+10*us)
				g.add(&e)
			}
		}
	}
	res := g.result()
	if len(res.Streams) != 2*len(devs) {
		t.Fatalf("%d streams; want %d", len(res.Streams), 2*len(devs))
	}
	for _, row := range res.Streams {
		j := slices.Index(devs, row.Device)
		gap := int64(j+1) * int64(row.Stream) * us
		// 3 gaps: from op i's end (i·(100 µs + gap) + 10 µs) to op i+1's start.
		if want := 3 * (100*us + gap - 10*us); row.TotalNs != want {
			t.Errorf("device %d stream %d: %d ns idle; want %d", row.Device, row.Stream, row.TotalNs, want)
		}
	}
}

// A stream's state is laid out by what an event touches (streamGaps): an op's fields in the first
// cache line, a gap's in the next two, and a state takes whole lines, so that a block of them
// starts each on a line of its own.
func TestStreamStateLayout(t *testing.T) {
	var st streamGaps
	if n := unsafe.Sizeof(st); n%64 != 0 || n*streamBlock != 32<<10 {
		t.Errorf("a stream state is %d bytes; want a multiple of 64 that fills a 32 KiB block %d times", n, streamBlock)
	}
	if off := unsafe.Offsetof(st.priority); off >= 64 {
		t.Errorf("an op's fields end at %d; want them in the first 64 bytes", off+1)
	}
	if off := unsafe.Offsetof(st.causes); off != 64 {
		t.Errorf("the times by cause start at %d; want 64", off)
	}
	g := newIdleGaps(timeline.IdleEngine, 0)
	for d := range int32(3 * streamBlock) {
		e := kern(d, 1, 0, us)
		g.add(&e)
	}
	for i, b := range g.blocks {
		if p := uintptr(unsafe.Pointer(b)); p%64 != 0 {
			t.Errorf("block %d of stream states starts at %#x; want a cache line's start", i, p)
		}
	}
}

// More streams on one device than its directory holds, and many devices, interleaved: each
// stream's gaps are its own, whether found in the directory or through the cache and the map.
func TestIdleStreamsPastDirectory(t *testing.T) {
	const devices, streams = 600, 2*devStreams + 3
	g := newIdleGaps(timeline.IdleEngine, 0)
	for i := range int64(3) {
		for stream := uint32(1); stream <= streams; stream++ {
			for d := range int32(devices) {
				gap := int64(d%7+1) * int64(stream) * us // each stream its own gap
				e := kern(d, stream, i*(100*us+gap), i*(100*us+gap)+10*us)
				g.add(&e)
			}
		}
	}
	res := g.result()
	if len(res.Streams) != devices*streams {
		t.Fatalf("%d streams; want %d", len(res.Streams), devices*streams)
	}
	for _, row := range res.Streams {
		gap := int64(row.Device%7+1) * int64(row.Stream) * us
		if want := 2 * (100*us + gap - 10*us); row.TotalNs != want {
			t.Errorf("device %d stream %d: %d ns idle; want %d", row.Device, row.Stream, row.TotalNs, want)
		}
	}
}
