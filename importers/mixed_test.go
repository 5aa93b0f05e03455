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
		for _, want := range []string{fr + " is a PyTorch Flight Recorder dump", insp + " a NCCL Inspector log", "not joined by rank",
			"analyse each format on its own", "docs/importers.md"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: error %q lacks %q", name, msg, want)
			}
		}
	}
}
