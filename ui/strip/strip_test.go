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
	act, which := Cells(tr, 0, 1000, 2)
	if act[0] != theme.Kernel || which[0] != 1 {
		t.Errorf("cell 0: %v (op %d); want the kernel that fills 90%% of it", act[0], which[0])
	}
	if act[1] != theme.Kernel || which[1] != 4 {
		t.Errorf("cell 1: %v (op %d); want the kernel (500 ns) over the copy (10 ns) and the idle (490 ns)", act[1], which[1])
	}
}
