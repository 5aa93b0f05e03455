package flightrecorder

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/importers/kineto"
	"github.com/xfertop/xfertop/timeline"
)

// withEntry copies testdata/mismatch_json into a new directory with rank 0's entries[0] changed by
// edit, and returns the directory.
func withEntry(t *testing.T, edit func(e map[string]any)) string {
	t.Helper()
	dir := t.TempDir()
	for r := range 2 {
		name := "nccl_trace_rank_" + string(rune('0'+r)) + ".json"
		b, err := os.ReadFile(filepath.Join("testdata", "mismatch_json", name))
		if err != nil {
			t.Fatal(err)
		}
		if r == 0 {
			var d map[string]any
			if err := json.Unmarshal(b, &d); err != nil {
				t.Fatal(err)
			}
			edit(d["entries"].([]any)[0].(map[string]any))
			if b, err = json.Marshal(d); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func collectives(im *kineto.Imported) (n int, span int64) {
	lo, hi := int64(1<<62), int64(-1<<62)
	for _, e := range im.Events {
		if e.Kind == timeline.KindCollective {
			n++
			lo, hi = min(lo, e.Start), max(hi, e.End)
		}
	}
	return n, hi - lo
}

func warned(im *kineto.Imported, s string) bool {
	for _, w := range im.Warnings {
		if strings.Contains(w, s) {
			return true
		}
	}
	return false
}

// TestOneEntryOff: an entry with something wrong costs that entry (or its size, or its time),
// warned about with the rank and the entry named; the rank keeps its dump and the others their
// times.
func TestOneEntryOff(t *testing.T) {
	base, err := ReadFiles([]string{"testdata/mismatch_json"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	nBase, spanBase := collectives(base)
	cases := []struct {
		name  string
		edit  func(e map[string]any)
		ops   int    // collectives imported
		want  string // a warning
		bytes bool   // rank 0's first op keeps its size
	}{
		{"time -1", func(e map[string]any) { e["time_created_ns"] = -1 }, nBase,
			"(rank 0): entry 0 (nccl:all_reduce): time_created_ns -1 is not a time: its time is unknown (drawn from when its watchdog saw it start", true},
		{"time text, no start", func(e map[string]any) { e["time_created_ns"] = "soon"; delete(e, "time_discovered_started_ns") }, nBase,
			`entry 0 (nccl:all_reduce): time_created_ns "soon" is not a time: its time is unknown (drawn at entry 1's creation time`, true},
		{"no time", func(e map[string]any) { delete(e, "time_created_ns") }, nBase,
			"entry 0 (nccl:all_reduce): no time_created_ns: its time is unknown", true},
		{"size 1e30", func(e map[string]any) { e["input_sizes"] = []any{[]any{1e30}} }, nBase,
			"(rank 0): entry 0: nccl:all_reduce: input_sizes: dimension 1e+30 is not a size: its size is unknown", true},
		{"both sizes bad", func(e map[string]any) { e["input_sizes"] = "x"; e["output_sizes"] = []any{[]any{-1}} }, nBase,
			"output_sizes: dimension -1 is not a size: its size is unknown", false},
		{"bogus dtype", func(e map[string]any) { e["input_dtypes"] = []any{"Bogus"}; e["output_dtypes"] = []any{"Bogus"} }, nBase,
			`entry 0: nccl:all_reduce: input_dtypes: "Bogus" is no dtype xfertop knows: its size is unknown`, false},
		{"no name", func(e map[string]any) { delete(e, "profiling_name") }, nBase - 1,
			"(rank 0): entry 0: no profiling_name: left out", true},
		{"seq abc", func(e map[string]any) { e["collective_seq_id"] = "abc" }, nBase - 1,
			`entry 0: nccl:all_reduce: collective_seq_id "abc" is not a sequence id: left out`, true},
		{"state done", func(e map[string]any) { e["state"] = "done" }, nBase - 1,
			`entry 0: nccl:all_reduce: state "done" is none of scheduled, started, completed: left out`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			im, err := ReadFiles([]string{withEntry(t, c.edit)}, Options{})
			if err != nil {
				t.Fatalf("ReadFiles: %v; want the dumps read with a warning", err)
			}
			if !warned(im, c.want) {
				t.Errorf("warnings %q; want one containing %q", im.Warnings, c.want)
			}
			for _, bad := range []string{"without a dump", "carry no creation times"} {
				if warned(im, bad) {
					t.Errorf("warnings %q; want none saying %q", im.Warnings, bad)
				}
			}
			n, span := collectives(im)
			if n != c.ops {
				t.Errorf("%d collectives; want %d", n, c.ops)
			}
			if span < spanBase/2 {
				t.Errorf("collectives span %d ns; want about %d (the other entries' times kept)", span, spanBase)
			}
			var first *timeline.Event
			for i := range im.Events {
				if e := &im.Events[i]; e.Kind == timeline.KindCollective && e.Device == 0 && (first == nil || e.Start < first.Start) {
					first = e
				}
			}
			if first != nil && (first.Bytes > 0) != c.bytes {
				t.Errorf("rank 0's first op has %d bytes; want known: %v", first.Bytes, c.bytes)
			}
		})
	}
}
