package strip

import (
	"testing"

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
	act, which := Cells(tr, 0, 1000, 2, 0)
	if act[0] != theme.Kernel || which[0] != 1 {
		t.Errorf("cell 0: %v (op %d); want the kernel that fills 90%% of it", act[0], which[0])
	}
	if act[1] != theme.Kernel || which[1] != 4 {
		t.Errorf("cell 1: %v (op %d); want the kernel (500 ns) over the copy (10 ns) and the idle (490 ns)", act[1], which[1])
	}
}

// Live, a stream's time after its last reported op is drawn up to now as Pending (an op may be
// running there), so every stream reaches the right edge; a finished session (now 0) draws
// nothing after the last op, and a stream with no op held draws nothing. A gap that goes on past
// the right edge is idle.
func TestCellsLiveEdge(t *testing.T) {
	kernel := agg.Track{Ops: []agg.Op{{Start: 0, End: 250, Index: 1, Kind: timeline.KindKernel}}}
	tests := []struct {
		name string
		tr   agg.Track
		now  int64
		want []theme.Activity
	}{
		{"live", kernel, 700, []theme.Activity{theme.Kernel, theme.Kernel, theme.Kernel, theme.Pending, theme.Pending, theme.Pending, theme.Pending, theme.None, theme.None, theme.None}},
		{"finished", kernel, 0, []theme.Activity{theme.Kernel, theme.Kernel, theme.Kernel, theme.None, theme.None, theme.None, theme.None, theme.None, theme.None, theme.None}},
		{"empty", agg.Track{}, 700, make([]theme.Activity, 10)},
		// The next op starts past the right edge: the gap up to it is idle, not blank.
		{"gap past the edge", agg.Track{Ops: append(kernel.Ops[:1:1], agg.Op{Start: 2000, End: 2100, Index: 2, Kind: timeline.KindKernel})}, 0,
			[]theme.Activity{theme.Kernel, theme.Kernel, theme.Kernel, theme.Idle, theme.Idle, theme.Idle, theme.Idle, theme.Idle, theme.Idle, theme.Idle}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			act, _ := Cells(&tt.tr, 0, 100, 10, tt.now) // cell 2 is half kernel, half pending: the kernel wins the tie
			for c := range act {
				if act[c] != tt.want[c] {
					t.Errorf("cells %v; want %v", act, tt.want)
					break
				}
			}
		})
	}
}
