package importers

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/timeline"
)

// The job of testdata/joint: its Flight Recorder dumps (flightrecorder/testdata/hang) and the
// NCCL Inspector logs gen.py wrote from them.
const (
	jointFR        = "flightrecorder/testdata/hang"
	jointInspector = "testdata/joint/inspector"
)

// A trace with Flight Recorder dumps (or any other mixture but two or three of Flight Recorder,
// Inspector and RAS) is refused, by Read and by Stream alike, and the error names both files and
// their formats, says that such sources are not joined by rank, and what to do instead.
func TestMixedFormatsSaysWhatToDo(t *testing.T) {
	fr := "flightrecorder/testdata/hang/nccl_trace_rank_0"
	trace := "chrome/testdata/small.json"
	_, errRead := Read([]string{fr, trace}, Options{})
	_, errStream := Stream([]string{fr, trace}, Options{}, &Collect{})
	for name, err := range map[string]error{"Read": errRead, "Stream": errStream} {
		if err == nil {
			t.Fatalf("%s: a Flight Recorder dump and an NCCL RAS report read together; want refused", name)
		}
		msg := err.Error()
		for _, want := range []string{fr + " is a PyTorch Flight Recorder dump", trace + " a trace (JSON)", "not joined by rank",
			"analyse each format on its own (the PyTorch Flight Recorder dumps, then the traces (JSON))", "docs/importers.md"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: error %q lacks %q", name, msg, want)
			}
		}
	}
}

// analyzeInputs streams paths into an analysis and returns its result and the header.
func analyzeInputs(t *testing.T, paths ...string) (*analysis.Result, *Header, *Result) {
	t.Helper()
	var c Collect
	res, err := Stream(paths, Options{}, &c)
	if err != nil {
		t.Fatal(err)
	}
	a := analysis.New(c.Header.Meta)
	for i := range c.All {
		a.Emit(&c.All[i])
	}
	return a.Result(c.Header.Strings), c.Header, res
}

// hostNames is each rank's host name as the analysis's one host map has it.
func hostNames(r *analysis.Result) map[int32]string {
	out := map[int32]string{}
	for d := int32(0); d < 64; d++ {
		if h, ok := r.Hosts.Host(d); ok {
			out[d], _ = r.Hosts.Name(h)
		}
	}
	return out
}

// A job's Flight Recorder dumps and its NCCL Inspector logs given together are joined by rank:
// Flight Recorder's verdict (rank 3 never entered all_reduce #5 on default_pg, which ranks 0–2
// wait in) with Inspector's measurements of the same collectives (all_reduce #1–#4 over the 4
// ranks, counted once: kernels of 9.5 ms on clocks 50 µs apart per rank, so 9.65 ms an instance,
// 4 MiB each; the tp pair's all_gather of 8 KiB in 3 ms + 50 µs) and its host names (rank 3 on
// node1). Read gives the same events as Stream.
func TestJoinFlightRecorderInspector(t *testing.T) {
	r, h, res := analyzeInputs(t, jointFR, jointInspector)
	if res.Format != FormatJoined || h.Meta.Backend != JoinedFormat || h.Meta.Devices != 4 {
		t.Errorf("format %v, backend %q, %d devices; want the joined format of 4 devices", res.Format, h.Meta.Backend, h.Meta.Devices)
	}
	if len(r.Findings) == 0 || r.Findings[0].Rank != 3 || r.Findings[0].Seq != 5 || !strings.Contains(r.Findings[0].Evidence, "rank 3 never entered it") {
		t.Fatalf("findings %+v; want Flight Recorder's hang, rank 3 never entering #5, first", r.Findings)
	}
	if got := hostNames(r); got[3] != "node1" || got[0] != "node0" {
		t.Errorf("hosts %v; want Inspector's node1 for rank 3, node0 for rank 0", got)
	}
	want := map[string]struct {
		ranks      int
		count, p50 int64
	}{"all_reduce": {4, 4, 9_650_000}, "all_gather": {2, 1, 3_050_000}}
	if len(r.Collectives.Rows) != len(want) || len(r.Collectives.Partial) != 0 {
		t.Fatalf("collectives %+v, partial %+v; want one all_reduce and one all_gather row, complete", r.Collectives.Rows, r.Collectives.Partial)
	}
	for _, c := range r.Collectives.Rows {
		w := want[c.Op]
		if c.Ranks != w.ranks || c.Count != w.count || c.P50Ns == nil || *c.P50Ns != w.p50 || c.AlgoProto != "Ring_Simple" {
			t.Errorf("%s row %+v (p50 %v); want %d ranks, %d instances, p50 %d ns, Inspector's Ring_Simple", c.Op, c, c.P50Ns, w.ranks, w.count, w.p50)
		}
	}
	im, err := Read([]string{jointFR, jointInspector}, Options{})
	if err != nil || len(im.Events) != res.Events {
		t.Errorf("Read: %v, %d events; want the %d Stream gave", err, len(im.Events), res.Events)
	}
	w := strings.Join(res.Warnings, "\n")
	for _, s := range []string{"joined by rank: Flight Recorder", "not aligned further", "kept for the diagnosis's sequence matching only"} {
		if !strings.Contains(w, s) {
			t.Errorf("warnings %q lack %q", w, s)
		}
	}
	var shadows int
	for _, e := range im.Events {
		if e.Status == timeline.StatusShadow {
			shadows++
		}
	}
	if shadows != 18 { // every completed Flight Recorder op: 4 ranks × 4 all_reduces, and 2 all_gathers
		t.Errorf("%d shadow ops; want 18", shadows)
	}
}

// Inspector logs of an 8-rank job given with the 4-rank job's dumps are refused, naming a file of
// each.
func TestJoinRefusesOtherJob(t *testing.T) {
	dir := t.TempDir()
	ents, err := os.ReadDir(jointInspector)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(jointInspector, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		b = []byte(strings.ReplaceAll(string(b), `"n_ranks":4`, `"n_ranks":8`))
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err = Read([]string{jointFR, dir}, Options{})
	if err == nil || !strings.Contains(err.Error(), jointFR) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "4 ranks, 8 ranks") {
		t.Errorf("dumps of 4 ranks with logs of 8: %v; want refused, naming both and their sizes", err)
	}
}

// Each format takes the article it is said with, and the message its plural.
func TestFormatArticles(t *testing.T) {
	for _, c := range []struct {
		f               Format
		article, plural string
	}{
		{FormatRecording, "an xfertop recording", "xfertop recordings"},
		{FormatTrace, "a trace (JSON)", "traces (JSON)"},
		{FormatNsys, "an Nsight Systems SQLite export", "Nsight Systems SQLite exports"},
		{FormatInspector, "an NCCL Inspector log", "NCCL Inspector logs"},
		{FormatRAS, "an NCCL RAS report (ncclras)", "NCCL RAS reports"},
		{FormatFlightRecorder, "a PyTorch Flight Recorder dump", "PyTorch Flight Recorder dumps"},
	} {
		if got := c.f.withArticle(); got != c.article {
			t.Errorf("withArticle() = %q; want %q", got, c.article)
		}
		if got := c.f.plural(); got != c.plural {
			t.Errorf("plural() = %q; want %q", got, c.plural)
		}
	}
}
