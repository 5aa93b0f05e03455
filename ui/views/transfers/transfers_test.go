package transfers

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/ui/theme"
	"github.com/xfertop/xfertop/ui/widget"
	"github.com/xfertop/xfertop/units"
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

// Rows that stood in for the topology's (--fit on shared GPUs) say so in the algo_proto column, as
// the text report does, beside their unknown rates: a send row of copies, an all-reduce of ranks on
// one GPU; a real row beside them is not labelled.
func TestTransfersEmulated(t *testing.T) {
	bw := 100.0
	res := &analysis.Result{
		Transfers: analysis.Transfers{BySize: []analysis.SizeRow{
			{Kind: "send", SizeClass: 1 << 26, Stats: analysis.Stats{Count: 180, Bytes: 180 << 26, Emulated: 180}},
			{Kind: "d2h", SizeClass: 1 << 20, Stats: analysis.Stats{Count: 1, Bytes: 1 << 20, GBps: &bw}},
		}},
		Collectives: analysis.Collectives{Rows: []analysis.Collective{{Op: "all_reduce", Ranks: 8, SizeClass: 1 << 30, Bytes: 1 << 30, Count: 10, Emulated: true}}},
	}
	v := New(&widget.Frame{Res: res, Styles: theme.DefaultStyles(true), Keys: widget.DefaultKeyMap()})
	v.SetSize(160, 10)
	lines := strings.Split(ansi.Strip(v.View()), "\n")
	for _, tc := range []struct {
		kind     string
		emulated bool
	}{{"send", true}, {"all_reduce", true}, {"d2h", false}} {
		found := false
		for _, l := range lines[1:] {
			if strings.HasPrefix(l, tc.kind) {
				found = true
				if got := strings.HasSuffix(strings.TrimRight(l, " "), "emulated"); got != tc.emulated {
					t.Errorf("%s row %q: labelled emulated %v; want %v", tc.kind, l, got, tc.emulated)
				}
			}
		}
		if !found {
			t.Errorf("no %s row in\n%s", tc.kind, strings.Join(lines, "\n"))
		}
	}
}

// The table's last line names the ranks most often last at collectives, as the analysis ranks
// them (worst first), and says nothing when no collective spanned two ranks.
func TestTransfersCollectiveStragglers(t *testing.T) {
	late1, late2 := int64(5_000), int64(1_200_000)
	cases := []struct {
		name string
		ss   []analysis.Straggler
		rows []analysis.Collective
		want string
	}{
		{"no collective of two ranks", nil, []analysis.Collective{{Op: "all_reduce", Ranks: 1, Count: 3}}, ""},
		{"nobody late", nil, []analysis.Collective{{Op: "all_reduce", Ranks: 8, Count: 3}}, "no straggler at collectives"},
		{"two of three", []analysis.Straggler{{Rank: 3, TimesLast: 12, LatenessNs50: &late1}, {Rank: 0, TimesLast: 2, LatenessNs50: &late2}, {Rank: 7, TimesLast: 1}}, nil,
			"last at collectives: rank 3 (12×, p50 5.00 µs), rank 0 (2×, p50 1.20 ms)"},
		{"unknown lateness", []analysis.Straggler{{Rank: 1, TimesLast: 1}}, nil, "last at collectives: rank 1 (1×, p50 " + units.Unknown + ")"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := &analysis.Result{Collectives: analysis.Collectives{Rows: c.rows, Stragglers: c.ss}}
			v := New(&widget.Frame{Res: res, Styles: theme.DefaultStyles(true), Keys: widget.DefaultKeyMap()})
			v.SetSize(200, 6)
			lines := strings.Split(ansi.Strip(v.View()), "\n")
			last := lines[len(lines)-1]
			if c.want == "" {
				if strings.Contains(last, "last at") {
					t.Errorf("stragglers shown without any: %q", last)
				}
				return
			}
			if !strings.HasSuffix(strings.TrimRight(last, " "), c.want) {
				t.Errorf("last line %q, want it to end in %q", last, c.want)
			}
		})
	}
}

// At any width the columns that fit are shown whole: the least important give way first, a
// column blank in every row takes no room, and no cell is cut to an ellipsis.
func TestTransfersColumnsGiveWay(t *testing.T) {
	alg, bus, rate, p := 123.4, 215.9, 111.0, int64(188_000)
	res := &analysis.Result{
		Transfers: analysis.Transfers{BySize: []analysis.SizeRow{{Kind: "send", SizeClass: 64 << 20, Stats: analysis.Stats{Count: 90, Bytes: 90 << 26, P50Ns: &p, P99Ns: &p, GBps: &rate}}}},
		Collectives: analysis.Collectives{Rows: []analysis.Collective{
			{Op: "all_reduce", Ranks: 8, SizeClass: 1 << 30, Bytes: 1 << 30, Count: 2, P50Ns: &p, P99Ns: &p, AlgBW: &alg, BusBW: &bus, AlgoProto: "Ring_Simple"},
		}},
	}
	cases := []struct {
		w          int
		want, gone []string // headings shown and dropped
	}{
		{200, []string{"kind", "size", "ranks", "count", "payload", "p50", "p99", "GB/s", "busbw", "algo_proto"}, nil},
		{80, []string{"kind", "size", "payload", "GB/s", "busbw", "algo_proto", "p50"}, []string{"ranks"}},
		{60, []string{"kind", "size", "payload", "GB/s", "busbw"}, []string{"ranks", "p99", "count", "p50"}},
		// bytes, sorted by, stays though less important than GB/s
		{30, []string{"kind", "size", "payload"}, []string{"ranks", "p99", "count", "p50", "algo_proto", "busbw"}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.w), func(t *testing.T) {
			v := New(&widget.Frame{Res: res, Styles: theme.DefaultStyles(true), Keys: widget.DefaultKeyMap()})
			v.SetSize(c.w, 8)
			out := ansi.Strip(v.View())
			lines := strings.Split(out, "\n")
			for i, l := range lines[:3] {
				if ansi.StringWidth(l) > c.w {
					t.Errorf("line %d is %d cells wide in %d: %q", i, ansi.StringWidth(l), c.w, l)
				}
				if strings.Contains(l, "…") {
					t.Errorf("line %d has a cut cell: %q", i, l)
				}
				if i == 0 && strings.HasSuffix(l, " ") {
					t.Errorf("heading ends in a blank column: %q", l)
				}
			}
			head := strings.Fields(strings.ReplaceAll(lines[0], "▼", ""))
			for _, h := range c.want {
				if !slices.Contains(head, h) {
					t.Errorf("heading %q missing from %q", h, lines[0])
				}
			}
			for _, h := range c.gone {
				if slices.Contains(head, h) {
					t.Errorf("heading %q shown in %q; it should have given way", h, lines[0])
				}
			}
			if slices.Contains(head, "busbw") && !strings.Contains(out, "215.9") {
				t.Errorf("busbw heading without its value:\n%s", out)
			}
		})
	}
}
