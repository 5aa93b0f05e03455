package overview

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/agg"
	"github.com/xfertop/xfertop/ui/theme"
	"github.com/xfertop/xfertop/ui/widget"
	"github.com/xfertop/xfertop/units"
)

func TestProfilerCostLine(t *testing.T) {
	pct := func(v float64) *float64 { return &v }
	tests := []struct {
		rows []analysis.ProfilerCost
		want string
	}{
		{[]analysis.ProfilerCost{{Device: 0, NsPerCallback: 80, OverheadPct: pct(0.4)}, {Device: 1, NsPerCallback: 95, OverheadPct: pct(1.25)},
			{Device: 2, NsPerCallback: 70, OverheadPct: pct(0.3)}},
			"NCCL profiler plugin's cost: 80 ns/callback (p50 of 3 ranks, worst 95, rank 1), 0.40 % of NCCL op time (worst 1.25 %, rank 1)"},
		{[]analysis.ProfilerCost{{Device: 4, NsPerCallback: 60}},
			"NCCL profiler plugin's cost: 60 ns/callback (p50 of 1 rank, worst 60, rank 4), share of NCCL op time — (none observed yet)"},
	}
	for _, tt := range tests {
		if got := profilerCostLine(tt.rows); got != tt.want {
			t.Errorf("profilerCostLine(%+v)\n = %q\nwant %q", tt.rows, got, tt.want)
		}
	}
}

// The sparkline's totals are each device's rate over all its links a bucket, computed once for a
// Result, newest bucket and width: asked again (the peak, then the row; a tick's frame drawn from
// the same Result) they are the same figures, not computed again; another Result computes anew.
func TestSparkTotalsOncePerResult(t *testing.T) {
	a := analysis.New(timeline.Meta{GPUsPerHost: 2, Devices: 2})
	for i := range int64(6) {
		start := i * analysis.BucketNs
		a.Emit(&timeline.Event{Kind: timeline.KindMemcpy, Sub: uint8(timeline.CopyH2D), Device: 0, Peer: timeline.NoDevice,
			Start: start, End: start + analysis.BucketNs/2, Bytes: (i + 1) << 20})
	}
	res := a.Result(nil)
	d := &res.Links.Devices[0]
	var c sparkTotals
	got := c.of(res, 5, 6, d)
	var sum float64
	for k := range int64(6) {
		var want float64 // every link's rate
		for l := range analysis.NumLinks {
			r, _ := d.Rate(l, k)
			want += r
		}
		if got[k] != want {
			t.Errorf("bucket %d: %v; want %v", k, got[k], want)
		}
		sum += got[k]
	}
	if sum == 0 {
		t.Fatal("no traffic in the sparkline's buckets")
	}
	if again := c.of(res, 5, 6, d); &again[0] != &got[0] {
		t.Error("the same Result's totals were computed again")
	}
	if other := c.of(a.Result(nil), 5, 6, d); &other[0] == &got[0] {
		t.Error("another Result's totals were taken from the last one's")
	}
}

// The idle-mostly column names a cause only beside idle time: a device never idle says so, even
// where its streams had gaps (others ran meanwhile), and a device that ran nothing is unknown.
func TestIdleCause(t *testing.T) {
	for _, c := range []struct {
		tm   analysis.DeviceTime
		want string
	}{
		{analysis.DeviceTime{SpanNs: 1000, IdleNs: 0, IdleCause: ""}, "not idle"},
		{analysis.DeviceTime{SpanNs: 1000, IdleNs: 1, IdleCause: "host_wait"}, "host_wait"},
		{analysis.DeviceTime{SpanNs: 1000, IdleNs: 10}, "—"},
		{analysis.DeviceTime{}, "—"},
	} {
		if got := idleCause(c.tm); got != c.want {
			t.Errorf("idleCause(%+v) = %q; want %q", c.tm, got, c.want)
		}
	}
}

// The sparklines' heading says the time they cover: their width, or the run's time so far when it
// is shorter (a 1.55 s run's is not "last 4.40 s").
func TestHistSpan(t *testing.T) {
	for _, tc := range []struct {
		histW  int
		bucket int64
		want   int64
	}{{88, 30, 31 * analysis.BucketNs}, {88, 200, 88 * analysis.BucketNs}, {10, -1, 0}} {
		d := deviceTable{histW: tc.histW, bucket: tc.bucket}
		if got := d.histSpan(); got != tc.want {
			t.Errorf("%d buckets wide at bucket %d: %d ns; want %d", tc.histW, tc.bucket, got, tc.want)
		}
	}
}

// A source that records no ops (NCCL RAS) moved an unknown amount on links, not 0 B, and each
// link's rate and the total are unknown (—), as the report's ops_unknown says; a source that
// records ops and moved nothing yet still shows its measured 0.
func TestNoOpsMovedUnknown(t *testing.T) {
	for _, c := range []struct {
		backend   string
		want, not []string
	}{
		{"nccl-ras", []string{"Moved on links " + units.Unknown + " (the source records no ops)", units.Unknown}, []string{"0 B", "0.0"}},
		{"sim", []string{"Moved on links 0 B", "0.0"}, []string{"records no ops"}},
	} {
		t.Run(c.backend, func(t *testing.T) {
			meta := timeline.Meta{Backend: c.backend, Devices: 2, GPUsPerHost: 2, LinkPeaks: [timeline.NumPeaks]float64{1e9, 1e9, 1e9, 1e9}}
			res := analysis.New(meta).Result(nil)
			fr := &widget.Frame{Res: res, Meta: meta, State: &agg.State{}, Styles: theme.DefaultStyles(true), Keys: widget.DefaultKeyMap()}
			m := New(fr)
			m.SetSize(160, 40)
			v := ansi.Strip(m.View())
			for _, w := range c.want {
				if !strings.Contains(v, w) {
					t.Errorf("overview lacks %q:\n%s", w, v)
				}
			}
			for _, n := range c.not {
				if strings.Contains(v, n) {
					t.Errorf("overview shows %q:\n%s", n, v)
				}
			}
		})
	}
}
