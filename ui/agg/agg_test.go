package agg

import (
	"math"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

func feed(s *State, evs ...timeline.Event) *timeline.Window {
	w := timeline.NewWindow(0, nil)
	for i := range evs {
		w.Emit(&evs[i])
	}
	snap := w.Snapshot()
	s.Update(&snap)
	return w
}

// A 1 GB H2D copy over [25 ms, 125 ms) puts a quarter of its bytes in bucket 0 ([0, 50 ms)), half in
// bucket 1 and a quarter in bucket 2: rates of 5, 10 and 5 GB/s.
func TestThroughputApportioned(t *testing.T) {
	s := New(Info{Devices: 1, GPUsPerHost: 1})
	feed(s, timeline.Event{Kind: timeline.KindMemcpy, Sub: uint8(timeline.CopyH2D), Device: 0, Stream: 1, Start: 25e6, End: 125e6, Bytes: 1e9, Peer: -1})
	for b, want := range []float64{5e9, 10e9, 5e9, 0} {
		if got := s.Devices[0].Rate(LinkPCIe, int64(b)); math.Abs(got-want) > 1 {
			t.Errorf("bucket %d: %.0f B/s; want %.0f", b, got, want)
		}
	}
	if s.Moved != 1e9 {
		t.Errorf("moved %d", s.Moved)
	}
}

// Rank parts of one collective make one row sample: time = last end − first start, algbw from it.
func TestCollectiveInstance(t *testing.T) {
	s := New(Info{Devices: 2, GPUsPerHost: 2})
	ar := func(dev int32, start, end int64) timeline.Event {
		return timeline.Event{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Ranks: 2, Bytes: 1 << 20, Op: 7,
			Device: dev, Stream: 2, Start: start, End: end, Peer: -1}
	}
	feed(s, ar(0, 1000, 2000), ar(1, 1500, 3000))
	r := s.Rows[RowKey{Kind: "all_reduce", Size: 1 << 20, Ranks: 2}]
	if r == nil || r.Count != 1 {
		t.Fatalf("rows %+v", s.Rows)
	}
	if got := r.Lat.Quantile(0.5); math.Abs(got-2000)/2000 > 0.04 {
		t.Errorf("instance time %.0f ns; want 2000 ±3%%", got)
	}
}

// A barrier's arrivals: waits, the straggler and its lateness over the median arrival.
func TestBarrierFinish(t *testing.T) {
	s := New(Info{Devices: 3})
	b := func(dev int32, arrive int64) timeline.Event {
		return timeline.Event{Kind: timeline.KindBarrier, Ranks: 3, Op: 9, Device: dev, Stream: 1, Start: arrive, End: 1000, Peer: -1}
	}
	feed(s, b(0, 100), b(2, 900), b(1, 200))
	if len(s.Barriers) != 1 {
		t.Fatal("barrier not finished")
	}
	br := s.Barriers[0]
	if br.Straggler != 2 || br.Lateness != 700 || br.Arrivals[0].Wait != 900 || s.LastAt[2] != 1 {
		t.Errorf("barrier %+v", br)
	}
}

// Stream activity is dropped as the window trims it.
func TestTracksFollowTheWindow(t *testing.T) {
	s := New(Info{Devices: 1})
	w := timeline.NewWindow(1, nil) // the smallest window: one chunk
	for i := range 3 * 16384 {
		e := timeline.Event{Kind: timeline.KindKernel, Device: 0, Stream: 1, Start: int64(i), End: int64(i) + 1, Peer: -1}
		w.Emit(&e)
	}
	snap := w.Snapshot()
	s.Update(&snap)
	if n := len(s.Tracks[0].Ops); int64(n) != snap.Total-snap.Base {
		t.Errorf("track holds %d ops; the window holds %d", n, snap.Total-snap.Base)
	}
}

func TestHistQuantiles(t *testing.T) {
	var h Hist
	for v := 1; v <= 1000; v++ {
		h.Add(float64(v) * 1000)
	}
	for _, q := range []struct{ q, want float64 }{{0.5, 500_000}, {0.99, 990_000}, {0.01, 10_000}} {
		if got := h.Quantile(q.q); math.Abs(got-q.want)/q.want > 0.04 {
			t.Errorf("q%.2f = %.0f; want %.0f ±4%%", q.q, got, q.want)
		}
	}
}

func TestTelemetryLatest(t *testing.T) {
	s := New(Info{Devices: 1})
	feed(s, timeline.Event{Kind: timeline.KindDeviceSample, Sub: uint8(timeline.SampleUtilization), Device: 0, Bytes: 30},
		timeline.Event{Kind: timeline.KindDeviceSample, Sub: uint8(timeline.SampleUtilization), Device: 0, Bytes: 70})
	if s.Telemetry[0][timeline.SampleUtilization] != 70 {
		t.Errorf("latest utilisation %d; want 70", s.Telemetry[0][timeline.SampleUtilization])
	}
}
