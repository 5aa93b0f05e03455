package analysis

import (
	"slices"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

func TestSizeClass(t *testing.T) {
	tests := []struct{ n, want int64 }{
		{-5, 0}, {0, 0}, {1, 1}, {2, 2}, {3, 4}, {4, 4}, {5, 8}, {1000, 1024}, {1024, 1024}, {1025, 2048},
		{1 << 40, 1 << 40}, {1<<40 + 1, 1 << 41}, {1<<62 + 1, 1 << 62}, {1<<63 - 1, 1 << 62},
	}
	for _, tc := range tests {
		if got := SizeClass(tc.n); got != tc.want {
			t.Errorf("SizeClass(%d) = %d; want %d", tc.n, got, tc.want)
		}
	}
}

func TestTransfersEmpty(t *testing.T) {
	tr := analyze(timeline.Meta{}).Transfers
	if tr.Count != 0 || tr.Bytes != 0 || tr.BySize == nil || len(tr.BySize) != 0 {
		t.Errorf("empty transfers = %+v", tr)
	}
	for _, k := range timeline.TransferKinds {
		s, ok := tr.ByKind[k]
		if !ok || s.Count != 0 || s.GBps != nil || s.P50Ns != nil || s.P99Ns != nil {
			t.Errorf("by_kind[%s] = %+v, %v; want present, zero, unknown rate and times", k, s, ok)
		}
	}
}

func TestTransfersByKind(t *testing.T) {
	evs := []timeline.Event{
		// h2d: 1000 B in 100 ns (10 GB/s) and 1000 B in 10 ns (100 GB/s): bytes-weighted 2000/110.
		copyEv(timeline.CopyH2D, 0, timeline.NoDevice, 0, 100, 1000),
		copyEv(timeline.CopyH2D, 0, timeline.NoDevice, 200, 210, 1000),
		copyEv(timeline.CopyD2H, 1, timeline.NoDevice, 0, 50, 500),
		copyEv(timeline.CopyD2D, 1, timeline.NoDevice, 0, 40, 4000),
		copyEv(timeline.CopyP2P, 2, 3, 0, 25, 5000),
		// A memset writes memory but moves nothing: listed, not counted in the totals.
		copyEv(timeline.CopySet, 3, timeline.NoDevice, 0, 10, 7000),
		// A send and its receive are one transfer.
		sendEv(0, 1, 0, 100, 3000, 9), recvEv(1, 0, 10, 110, 3000, 9),
		// Failed ops are not counted anywhere.
		withStatus(copyEv(timeline.CopyH2D, 0, timeline.NoDevice, 300, 400, 1<<30), timeline.StatusError),
		withStatus(sendEv(0, 1, 0, 100, 1<<30, 10), timeline.StatusTimeout),
		withStatus(recvEv(1, 0, 0, 100, 1<<30, 10), timeline.StatusCanceled),
		// Collectives and kernels are not transfers.
		collEv(timeline.CollAllReduce, 2, 0, 11, 0, 100, 1<<20),
		kern(0, 1, 0, 100),
		// A transfer of unknown size has no rate, and is left out of its kind's: d2h's is the
		// known copy's 500 B in 50 ns, not 500 B in 100 ns.
		copyEv(timeline.CopyD2H, 1, timeline.NoDevice, 100, 150, 0),
	}
	tr := analyze(timeline.Meta{}, evs...).Transfers
	if want := int64(2 + 1 + 1 + 1 + 1 + 1); tr.Count != want {
		t.Errorf("Count = %d; want %d (copies but memsets, sends)", tr.Count, want)
	}
	if want := int64(1000 + 1000 + 500 + 4000 + 5000 + 3000); tr.Bytes != want || tr.UnknownSize != 1 {
		t.Errorf("Bytes, UnknownSize = %d, %d; want %d, 1", tr.Bytes, tr.UnknownSize, want)
	}
	if u := tr.ByKind["d2h"].UnknownSize; u != 1 {
		t.Errorf("d2h UnknownSize = %d; want 1", u)
	}
	tests := []struct {
		kind               string
		count, bytes, busy int64
		gbps               *float64
		p50, p99           *int64
	}{
		{"h2d", 2, 2000, 110, f64(18.18), i64(10), i64(100)},
		{"d2h", 2, 500, 100, f64(10), i64(50), i64(50)},
		{"d2d", 1, 4000, 40, f64(100), i64(40), i64(40)},
		{"p2p", 1, 5000, 25, f64(200), i64(25), i64(25)},
		{"memset", 1, 7000, 10, f64(700), i64(10), i64(10)},
		{"send", 1, 3000, 100, f64(30), i64(100), i64(100)},
		{"recv", 1, 3000, 100, f64(30), i64(100), i64(100)},
	}
	for _, tc := range tests {
		t.Run(tc.kind, func(t *testing.T) {
			s := tr.ByKind[tc.kind]
			if s.Count != tc.count || s.Bytes != tc.bytes || s.BusyNs != tc.busy {
				t.Errorf("count, bytes, busy = %d, %d, %d; want %d, %d, %d", s.Count, s.Bytes, s.BusyNs, tc.count, tc.bytes, tc.busy)
			}
			eqPtrF(t, "GBps", s.GBps, tc.gbps)
			eqPtrI(t, "P50Ns", s.P50Ns, tc.p50)
			eqPtrI(t, "P99Ns", s.P99Ns, tc.p99)
		})
	}
	if len(tr.ByKind) != len(timeline.TransferKinds) {
		t.Errorf("by_kind has %d kinds; want %d: %v", len(tr.ByKind), len(timeline.TransferKinds), tr.ByKind)
	}
}

// GB/s is total bytes over total time, not a median or mean of per-op rates.
func TestTransfersRateIsBytesWeighted(t *testing.T) {
	evs := []timeline.Event{
		sendEv(0, 1, 0, 1000, 1000, 1),  // 1 GB/s
		sendEv(0, 1, 0, 1000, 1000, 2),  // 1 GB/s
		sendEv(0, 1, 0, 10, 100_000, 3), // 10000 GB/s
	}
	s := analyze(timeline.Meta{}, evs...).Transfers.ByKind["send"]
	eqPtrF(t, "GBps", s.GBps, f64(float64(102_000)/2010)) // 50.75: not 1 (median), not 3334 (mean)
}

func TestTransfersBySize(t *testing.T) {
	evs := []timeline.Event{
		sendEv(0, 1, 0, 10, 1000, 1),
		sendEv(0, 1, 0, 20, 1024, 2),
		sendEv(0, 1, 0, 30, 1025, 3),
		copyEv(timeline.CopyH2D, 0, timeline.NoDevice, 0, 40, 3),
		copyEv(timeline.CopyH2D, 0, timeline.NoDevice, 0, 50, 0),
		recvEv(1, 0, 0, 10, 1000, 1),
		copyEv(timeline.CopySet, 0, timeline.NoDevice, 0, 5, 64),
	}
	rows := analyze(timeline.Meta{}, evs...).Transfers.BySize
	type row struct {
		kind         string
		class, count int64
		bytes, busy  int64
	}
	var got []row
	for _, r := range rows {
		got = append(got, row{r.Kind, r.SizeClass, r.Count, r.Bytes, r.BusyNs})
	}
	// Report order: h2d, d2h, d2d, p2p, memset, send, recv; then by size class.
	want := []row{
		{"h2d", 0, 1, 0, 50}, {"h2d", 4, 1, 3, 40},
		{"memset", 64, 1, 64, 5},
		{"send", 1024, 2, 2024, 30}, {"send", 2048, 1, 1025, 30},
		{"recv", 1024, 1, 1000, 10},
	}
	if !slices.Equal(got, want) {
		t.Errorf("by size:\n got %+v\nwant %+v", got, want)
	}
	for _, r := range rows {
		if r.Kind == "send" && r.SizeClass == 1024 {
			eqPtrF(t, "send/1024 GBps", r.GBps, f64(2024.0/30))
			eqPtrI(t, "send/1024 P50Ns", r.P50Ns, i64(10))
			eqPtrI(t, "send/1024 P99Ns", r.P99Ns, i64(20))
		}
		if r.SizeClass == 0 && r.GBps != nil {
			t.Errorf("unknown size: GBps = %v; want nil", *r.GBps)
		}
	}
}

// TestQuantisedRate: timestamps in whole µs (a Kineto trace) leave a 4 MiB memset that took "4 µs"
// anywhere between 3 and 5 µs: its rate is a range, 838.86–1398.10 GB/s, not a bare 1048.58 GB/s
// (above a V100's HBM2 peak); a 1 KiB one of "1 µs" may have taken no time at all (no upper bound).
// Long ops (100 ticks or more on average) keep their figure, and so does the engine's ns clock.
func TestQuantisedRate(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		name         string
		evs          []timeline.Event
		class        int64
		gbps, lo, hi *float64
	}{
		{"4 MiB in 4 µs, µs timestamps", []timeline.Event{copyEv(timeline.CopySet, 0, timeline.NoDevice, 1000, 5000, 4<<20)},
			4 << 20, nil, f(838.86), f(1398.1)},
		{"1 KiB in 1 µs, µs timestamps", []timeline.Event{copyEv(timeline.CopySet, 0, timeline.NoDevice, 1000, 2000, 1000), kern(0, 1, 3000, 9000)},
			1024, nil, f(0.5), nil},
		{"64 MiB in 200 µs, µs timestamps", []timeline.Event{copyEv(timeline.CopySet, 0, timeline.NoDevice, 1000, 201000, 200000000)},
			1 << 28, f(1000), nil, nil},
		{"4 MiB in 4 µs, ns timestamps", []timeline.Event{copyEv(timeline.CopySet, 0, timeline.NoDevice, 1001, 5001, 4000000)},
			4 << 20, f(1000), nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := New(timeline.Meta{})
			for i := range tc.evs {
				a.Emit(&tc.evs[i])
			}
			var got *SizeRow
			for _, r := range a.Result(nil).Transfers.BySize {
				if r.Kind == "memset" && r.SizeClass == tc.class {
					got = &r
				}
			}
			if got == nil {
				t.Fatalf("no memset row of class %d", tc.class)
			}
			eqPtrF(t, "GBps", got.GBps, tc.gbps)
			eqPtrF(t, "GBpsMin", got.GBpsMin, tc.lo)
			eqPtrF(t, "GBpsMax", got.GBpsMax, tc.hi)
		})
	}
}

// A rate below 1 GB/s is kept to three significant digits, not rounded to 0.00: 4 KiB in 1 ms is
// 0.0041 GB/s.
func TestTransfersSmallRate(t *testing.T) {
	tr := analyze(timeline.Meta{}, copyEv(timeline.CopyH2D, 0, timeline.NoDevice, 1, 1_000_001, 4096)).Transfers
	if g := tr.ByKind["h2d"].GBps; g == nil || *g != 0.0041 {
		t.Errorf("GBps = %s; want 0.0041", fmtPtrF(g))
	}
}
