package importers

import (
	"strings"
	"testing"
)

// A Flight Recorder dump and an NCCL Inspector log of one job are refused, as any two formats are,
// by Read and by Stream alike, and the error names both files and their formats, says that sources
// of one job are not joined by rank, and what to do instead.
func TestMixedFormatsSaysWhatToDo(t *testing.T) {
	fr := "flightrecorder/testdata/hang/nccl_trace_rank_0"
	insp := "inspector/testdata/v2.32/node0-pid1000.log"
	_, errRead := Read([]string{fr, insp}, Options{})
	_, errStream := Stream([]string{fr, insp}, Options{}, nil)
	for name, err := range map[string]error{"Read": errRead, "Stream": errStream} {
		if err == nil {
			t.Fatalf("%s: a Flight Recorder dump and an Inspector log read together; want refused", name)
		}
		msg := err.Error()
		for _, want := range []string{fr + " is a PyTorch Flight Recorder dump", insp + " an NCCL Inspector log", "not joined by rank",
			"analyse each format on its own (the PyTorch Flight Recorder dumps, then the NCCL Inspector logs)", "docs/importers.md"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: error %q lacks %q", name, msg, want)
			}
		}
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
		{FormatRAS, "an NCCL RAS report (ncclras -f json)", "NCCL RAS reports"},
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
