package transfers

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/ui/theme"
	"github.com/xfertop/xfertop/ui/widget"
)

// The transfers view shows each collective row's algorithm and protocol (NCCL Inspector's
// algo_proto label), one row per choice at a size, and nothing for rows whose choice is unknown.
func TestTransfersAlgoProto(t *testing.T) {
	bw, ch := 100.0, 16
	res := &analysis.Result{Collectives: analysis.Collectives{Rows: []analysis.Collective{
		{Op: "all_reduce", Ranks: 8, SizeClass: 1 << 30, Bytes: 1 << 30, Count: 2, AlgBW: &bw, BusBW: &bw, AlgoProto: "NVLS_Simple", Channels: &ch},
		{Op: "all_reduce", Ranks: 8, SizeClass: 1 << 30, Bytes: 1 << 30, Count: 1, AlgBW: &bw, BusBW: &bw, AlgoProto: "Ring_Simple", Channels: &ch},
		{Op: "all_gather", Ranks: 8, SizeClass: 8, Bytes: 8, Count: 1},
	}}}
	v := New(&widget.Frame{Res: res, Styles: theme.DefaultStyles(true), Keys: widget.DefaultKeyMap()})
	v.SetSize(160, 10)
	lines := strings.Split(ansi.Strip(v.View()), "\n")
	if !strings.HasSuffix(strings.TrimRight(lines[0], " "), "algo_proto") {
		t.Errorf("header %q lacks algo_proto", lines[0])
	}
	want := map[string]string{"NVLS_Simple": "all_reduce", "Ring_Simple": "all_reduce"}
	for label, op := range want {
		found := false
		for _, l := range lines[1:] {
			found = found || (strings.HasPrefix(l, op) && strings.HasSuffix(strings.TrimRight(l, " "), label))
		}
		if !found {
			t.Errorf("no %s row labelled %s in\n%s", op, label, strings.Join(lines, "\n"))
		}
	}
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "all_gather") && strings.Contains(l, "_") && strings.Count(l, "_") > 1 {
			t.Errorf("unknown choice labelled: %q", l)
		}
	}
}
