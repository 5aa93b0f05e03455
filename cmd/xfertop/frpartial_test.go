package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/importers/flightrecorder"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/theme"
	"github.com/xfertop/xfertop/ui/views/transfers"
	"github.com/xfertop/xfertop/ui/widget"
)

// scaledJob writes a 1,024-rank job from the Flight Recorder fixture hang/ with its generator
// (importers/flightrecorder/testdata/scale.py) in a new directory; flag and rank say which rank's
// dump is missing (--missing) or of another job (--foreign).
func scaledJob(t *testing.T, flag string, rank int) string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3, which writes the 1,024-rank dumps, is not on PATH")
	}
	dir := t.TempDir()
	script := filepath.Join("..", "..", "importers", "flightrecorder", "testdata", "scale.py")
	if out, err := exec.Command("python3", script, dir, "1024", flag, fmt.Sprint(rank)).CombinedOutput(); err != nil {
		t.Fatalf("scale.py: %v\n%s", err, out)
	}
	return dir
}

// A job of 1,024 ranks whose rank 517 left no dump (or a dump of another job, left out): its
// all_reduces #1–#4, which the 1,023 others completed, are shown with the figures of those
// ranks, marked partial (1023/1024; time a lower bound, bandwidths upper bounds), and rank 517 is
// named as the rank without a record — in the JSON, the text report and the console's transfers
// view alike, from the one analysis. Worked out from the fixture: each rank's all_reduce lasts
// 9.5 ms (duration_ms), ending 12 ms after its creation; the ranks' clocks lie 0, 50 and 100 µs
// apart, so the ranks seen span 9.6 ms; 4 MiB in 9.6 ms is 0.437 GB/s, and all_reduce's bus
// factor over 1,024 ranks, 2·1023/1024, makes 0.873.
func TestAnalyzeFlightRecorderRankMissing(t *testing.T) {
	for _, flag := range []string{"--missing", "--foreign"} {
		t.Run(flag, func(t *testing.T) {
			dir := scaledJob(t, flag, 517)
			code, out, errs := runCLI(t, "analyze", "--json", dir)
			var rep struct {
				Partial []struct {
					Ranks      int      `json:"ranks"`
					RanksSeen  []int    `json:"ranks_seen"`
					Count      int64    `json:"count"`
					TimeNs     *int64   `json:"time_ns_total"`
					P50Ns      *int64   `json:"time_ns_p50"`
					AlgBW      *float64 `json:"algbw_gbps"`
					BusBW      *float64 `json:"busbw_gbps"`
					Unrecorded []int32  `json:"ranks_unrecorded"`
				} `json:"collectives_partial"`
				Findings []struct {
					Rank int32 `json:"rank"`
				} `json:"findings"`
			}
			if code != exitOK || json.Unmarshal([]byte(out), &rep) != nil {
				t.Fatalf("analyze --json: exit %d\n%s", code, errs)
			}
			if len(rep.Partial) != 1 {
				t.Fatalf("partial rows %+v; want the all_reduce's", rep.Partial)
			}
			p := rep.Partial[0]
			if p.Ranks != 1024 || !slices.Equal(p.RanksSeen, []int{1023, 1023}) || p.Count != 4 || p.TimeNs == nil || *p.TimeNs != 4*9_600_000 ||
				p.P50Ns == nil || *p.P50Ns != 9_600_000 || p.AlgBW == nil || *p.AlgBW != 0.437 || p.BusBW == nil || *p.BusBW != 0.873 ||
				!slices.Equal(p.Unrecorded, []int32{517}) {
				t.Errorf("partial row %+v; want 1023 of 1024 ranks, 4 of 9.6 ms, 0.437 / 0.873 GB/s, rank 517 unrecorded", p)
			}
			if len(rep.Findings) == 0 || rep.Findings[0].Rank != 517 {
				t.Errorf("findings %+v; want the hang's culprit, rank 517, first", rep.Findings)
			}
			if flag == "--foreign" && !strings.Contains(errs, "nccl_trace_rank_517: its process group 0 (default_pg) has 8 ranks") {
				t.Errorf("warnings %q; want rank 517's dump named as of another job", errs)
			}

			_, text, _ := runCLI(t, "analyze", dir)
			for _, want := range []string{"all_reduce  1023/1024    4 MiB      4  ≥ 9.60 ms     ≤ 0.437     ≤ 0.873",
				"no record of rank 517 (no dump, or one left out)"} {
				if !strings.Contains(text, want) {
					t.Errorf("text report lacks %q:\n%s", want, text)
				}
			}

			im, err := flightrecorder.ReadFiles([]string{dir}, flightrecorder.Options{})
			if err != nil {
				t.Fatal(err)
			}
			a := analysis.New(timeline.Meta{})
			for i := range im.Events {
				a.Emit(&im.Events[i])
			}
			v := transfers.New(&widget.Frame{Res: a.Result(im.Strings), Styles: theme.DefaultStyles(true), Keys: widget.DefaultKeyMap()})
			v.SetSize(160, 8)
			view := ansi.Strip(v.View())
			for _, want := range []string{"1023/1024", "≥ 9.60 ms", "≤ 0.437", "≤ 0.873", "no record of rank 517"} {
				if !strings.Contains(view, want) {
					t.Errorf("transfers view lacks %q:\n%s", want, view)
				}
			}
		})
	}
}
