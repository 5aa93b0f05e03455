package strip

import (
	"slices"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/agg"
	"github.com/xfertop/xfertop/ui/theme"
)

// Zoomed out, a cell shows the kind that fills most of its time: a long kernel with one short copy
// in the same cell is kernel time, not a copy.
func TestCellShowsDominantKind(t *testing.T) {
	tr := &agg.Track{Ops: []agg.Op{
		{Start: 0, End: 900, Index: 1, Kind: timeline.KindKernel},
		{Start: 900, End: 910, Index: 2, Kind: timeline.KindMemcpy, Sub: uint8(timeline.CopyH2D)},
		{Start: 1000, End: 1010, Index: 3, Kind: timeline.KindMemcpy, Sub: uint8(timeline.CopyH2D)},
		{Start: 1500, End: 2000, Index: 4, Kind: timeline.KindKernel},
	}}
	act, which := Cells(tr, 0, 1000, 2, 0, nil)
	if act[0] != theme.Kernel || which[0] != 1 {
		t.Errorf("cell 0: %v (op %d); want the kernel that fills 90%% of it", act[0], which[0])
	}
	if act[1] != theme.Kernel || which[1] != 4 {
		t.Errorf("cell 1: %v (op %d); want the kernel (500 ns) over the copy (10 ns) and the idle (490 ns)", act[1], which[1])
	}
}

// Live, a stream's time after its last reported op is drawn up to now, so every stream reaches the
// right edge: an op the source reports running in its kind from its start (the cell of now marked
// as its head), the rest as Pending; a finished session (now 0) draws nothing after the last op,
// and a stream with no op held draws nothing, unless one is running.
func TestCellsLiveEdge(t *testing.T) {
	kernel := agg.Track{Ops: []agg.Op{{Start: 0, End: 250, Index: 1, Kind: timeline.KindKernel}}}
	const (
		K = theme.Kernel
		P = theme.Pending
		C = theme.Collective
		W = theme.PeerWait
		N = theme.None
	)
	coll := timeline.Event{Kind: timeline.KindCollective, Start: 400, End: 650}
	tests := []struct {
		name    string
		tr      agg.Track
		now     int64
		running []timeline.Event
		want    []theme.Activity
		which   []int64 // of the cells that name an op (nil: not checked)
		head    int
	}{
		{"live", kernel, 700, nil, []theme.Activity{K, K, K, P, P, P, P, N, N, N}, nil, -1},
		{"finished", kernel, 0, nil, []theme.Activity{K, K, K, N, N, N, N, N, N, N}, nil, -1},
		{"empty", agg.Track{}, 700, nil, make([]theme.Activity, 10), nil, -1},
		// A collective running since 400: pending (not known) from the kernel's end to its start,
		// then the collective up to now, its head in the cell of now.
		{"running", kernel, 700, []timeline.Event{coll}, []theme.Activity{K, K, K, P, C, C, C, N, N, N},
			[]int64{1, 1, 1, -1, -2, -2, -2, -1, -1, -1}, 6},
		// Seen running (End 200) before the stream's last reported end (250): it ended since.
		{"stale", kernel, 700, []timeline.Event{{Kind: timeline.KindCollective, Start: 100, End: 200}},
			[]theme.Activity{K, K, K, P, P, P, P, N, N, N}, nil, -1},
		// Running since before the last reported end (a group's parts share a stream): drawn from
		// that end.
		{"overlapping", kernel, 700, []timeline.Event{{Kind: timeline.KindCollective, Start: 100, End: 690}},
			[]theme.Activity{K, K, K, C, C, C, C, N, N, N}, nil, 6},
		// A stream whose first op is still running reaches now too.
		{"first op running", agg.Track{}, 520, []timeline.Event{{Kind: timeline.KindPeerWait, Start: 300, End: 500}},
			[]theme.Activity{N, N, N, W, W, W, N, N, N, N}, nil, 5},
		{"finished ignores running", kernel, 0, []timeline.Event{coll}, []theme.Activity{K, K, K, N, N, N, N, N, N, N}, nil, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Scratch
			act, which := s.Cells(&tt.tr, 0, 100, 10, tt.now, tt.running) // cell 2 is half kernel, half pending: the kernel wins the tie
			if !slices.Equal(act, tt.want) {
				t.Errorf("cells %v; want %v", act, tt.want)
			}
			if tt.which != nil && !slices.Equal(which, tt.which) {
				t.Errorf("which %v; want %v", which, tt.which)
			}
			if s.Head() != tt.head {
				t.Errorf("head %d; want %d", s.Head(), tt.head)
			}
		})
	}
}

// The running mark replaces the glyph of the cell of now, in its kind's colour; elsewhere the
// cells are drawn as before.
func TestDrawHead(t *testing.T) {
	st := theme.DefaultStyles(true)
	act := []theme.Activity{theme.Kernel, theme.Collective, theme.Collective, theme.None}
	if got := ansi.Strip(Draw(&st, act, -1, 2)); got != "█#» " {
		t.Errorf("Draw with head 2 = %q; want %q", got, "█#» ")
	}
	if got := ansi.Strip(Draw(&st, act, -1, -1)); got != "█## " {
		t.Errorf("Draw without head = %q; want %q", got, "█## ")
	}
}

// The line under the cursor gives a transfer's rate, but for an op that stood in for the
// topology's (--fit on shared GPUs), which it says is emulated instead: a 1 GiB all-reduce of ranks
// on one GPU "in" 6.8 µs is no 158,000 GB/s.
func TestDescribeEmulated(t *testing.T) {
	st := theme.DefaultStyles(true)
	for _, emulated := range []bool{false, true} {
		w := timeline.NewWindow(1<<10, timeline.NewStrings())
		e := timeline.Event{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Start: 0, End: 6800, Bytes: 1 << 30, Ranks: 8, Device: 0,
			Peer: timeline.NoDevice, Stream: 1, Op: 1}
		if emulated {
			e.Aux = timeline.AuxEmulated
		}
		w.Emit(&e)
		snap := w.Snapshot()
		got := ansi.Strip(Describe(&snap, &st, snap.Base))
		if strings.Contains(got, "GB/s") == emulated || strings.Contains(got, "emulated") != emulated {
			t.Errorf("emulated %v: %q", emulated, got)
		}
	}
}

// The ops a CUDA graph replayed are drawn as a captured region: their cells underlined, one run
// from its first cell to its last, and the line under the cursor says so.
func TestCapturedRegion(t *testing.T) {
	tr := &agg.Track{Ops: []agg.Op{
		{Start: 0, End: 1000, Index: 1, Kind: timeline.KindKernel},
		{Start: 1000, End: 2000, Index: 2, Kind: timeline.KindKernel, Captured: true},
		{Start: 2000, End: 3000, Index: 3, Kind: timeline.KindCollective, Captured: true},
		{Start: 3000, End: 4000, Index: 4, Kind: timeline.KindKernel},
	}}
	var s Scratch
	act, _ := s.Cells(tr, 0, 1000, 4, 0, nil)
	if got := s.Captured(); !slices.Equal(got, []bool{false, true, true, false}) {
		t.Fatalf("captured cells %v; want the middle two", got)
	}
	st := theme.DefaultStyles(true)
	out := DrawMarked(&st, act, s.Captured(), -1, -1)
	// Kernel then collective: two runs, each underlined (a style's closing sequence resets it).
	if strings.Count(out, st.CapturedOn) != 2 || strings.Count(out, st.CapturedOff) != 2 || strings.Index(out, st.CapturedOn) < strings.Index(out, "█") {
		t.Errorf("%q: want the middle two cells underlined", out)
	}
	if plain := ansi.Strip(out); plain != "██#█" {
		t.Errorf("cells %q; want the kinds' glyphs unchanged", plain)
	}
	if !strings.Contains(ansi.Strip(LegendMarked(&st, 200, false, false, true)), "__ replayed by a CUDA graph") {
		t.Error("the legend does not explain the underline")
	}
}

// The line under the cursor says an op of unknown time (timeline.AuxTimeUnknown: a Flight Recorder
// entry not retired, without duration_ms) is so, never "0 s", and gives it no rate.
func TestDescribeUnknownTime(t *testing.T) {
	st := theme.DefaultStyles(true)
	w := timeline.NewWindow(1<<10, timeline.NewStrings())
	e := timeline.Event{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Start: 100, End: 100, Bytes: 1 << 20, Ranks: 2, Device: 0,
		Peer: timeline.NoDevice, Stream: 1, Op: 1, Aux: timeline.AuxTimeUnknown}
	w.Emit(&e)
	snap := w.Snapshot()
	got := ansi.Strip(Describe(&snap, &st, snap.Base))
	if !strings.Contains(got, "time —") || strings.Contains(got, "0 s") || strings.Contains(got, "GB/s") {
		t.Errorf("Describe = %q; want \"time —\", no 0 s, no rate", got)
	}
}

// A stream of ops of unknown time (a Flight Recorder dump without durations) is drawn with each op
// in the cell it was created in and nothing between them called idle: they may have run then. A
// known op after them is drawn as ever, and the gap between two known ops is idle.
func TestCellsUnknownTime(t *testing.T) {
	tr := &agg.Track{Ops: []agg.Op{
		{Start: 100, End: 100, Index: 1, Kind: timeline.KindCollective, TimeUnknown: true},
		{Start: 2100, End: 2100, Index: 2, Kind: timeline.KindCollective, TimeUnknown: true},
		{Start: 4000, End: 5000, Index: 3, Kind: timeline.KindKernel},
		{Start: 7000, End: 8000, Index: 4, Kind: timeline.KindKernel},
	}}
	act, which := Cells(tr, 0, 1000, 8, 0, nil)
	want := []theme.Activity{theme.Collective, theme.None, theme.Collective, theme.None, theme.Kernel, theme.Idle, theme.Idle, theme.Kernel}
	for c := range want {
		if act[c] != want[c] {
			t.Errorf("cell %d: %v (op %d); want %v", c, act[c], which[c], want[c])
		}
	}
	if which[0] != 1 || which[2] != 2 {
		t.Errorf("cells 0 and 2 show ops %d and %d; want 1 and 2", which[0], which[2])
	}
}
