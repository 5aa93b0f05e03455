package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A torn rank recording in a job's directory is reported as a torn tail, as it is alone. A tear
// that leaves the file's meta and events merges them with the reader's warning; a tear before its
// meta (which names the rank) leaves the file out of the job, saying so, rather than calling it a
// recording of another kind.
func TestTornRankInJob(t *testing.T) {
	dir := t.TempDir()
	r0, r1 := filepath.Join(dir, "rank0-h-10.xfr"), filepath.Join(dir, "rank1-h-11.xfr")
	writeRankRecording(t, r0, 0, 10, 5e9)
	writeRankRecording(t, r1, 1, 11, 5e9)
	whole, err := os.ReadFile(r1)
	if err != nil {
		t.Fatal(err)
	}
	const leftOut = "it ends before its meta (its rank, host and clock) was written, so it holds nothing of its rank: left out of the job"
	tests := []struct {
		name   string
		size   int
		warn   string // what stderr says of rank 1's file
		events string // the report's event count
	}{
		{"cut after the header", 16, r1 + ": torn tail: the file ends at byte offset 16, after its header; " + leftOut, "3 events"},
		{"cut in the meta chunk", 100, r1 + ": torn tail at byte offset 16: the last 84 bytes hold no complete chunk (unexpected EOF) and were not read; " + leftOut, "3 events"},
		{"cut in the last chunk", len(whole) - 10, r1 + ": torn tail at byte offset ", "6 events"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(r1, whole[:tc.size], 0o644); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"replay", "--headless", dir}, {"analyze", dir}, {"analyze", r1, r0}} {
				code, out, errs := runCLI(t, args...)
				if code != exitOK || !strings.Contains(errs, "xfertop: warning: "+tc.warn) || !strings.Contains(out, tc.events) || strings.Contains(errs, "not a rank's recording") {
					t.Errorf("%v: exit %d, stderr %q, report %.200q; want %d, the warning %q and %s", args, code, errs, out, exitOK, tc.warn, tc.events)
				}
			}
		})
	}
	// Nothing but torn files: the tear is the error.
	only := t.TempDir()
	if err := os.WriteFile(filepath.Join(only, "rank1-h-11.xfr"), whole[:100], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(only, "rank2-h-12.xfr"), whole[:16], 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCLI(t, "analyze", only); code != exitData || !strings.Contains(errs, "rank1-h-11.xfr: torn tail at byte offset 16") {
		t.Errorf("analyze of torn files only: exit %d, stderr %q; want %d naming the tear", code, errs, exitData)
	}
}

// convert of one recording (a directory holding one) to a recording reads it as replay does: an
// empty or torn file is said to be so, not refused as a recording to be written as JSON; what is
// before a tear is kept; a file that is both the input and the output is refused before it is
// overwritten.
func TestConvertRecordingToRecording(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "rank0-h-10.xfr")
	writeRankRecording(t, src, 0, 10, 5e9)
	whole, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	mixed := t.TempDir()
	empty := filepath.Join(mixed, "empty.xfr")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mixed, "notes.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	torn := filepath.Join(dir, "torn.xfr")
	if err := os.WriteFile(torn, whole[:len(whole)-10], 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.xfr")
	tests := []struct {
		args      []string
		code      int
		has, hasO string
	}{
		{[]string{"convert", mixed, out}, exitData, empty + ": the file is empty", ""},
		{[]string{"convert", torn, out}, exitOK, torn + ": torn tail at byte offset", "wrote " + out + ": 3 events from " + torn + " (a recording, read and written again)"},
		{[]string{"convert", src, src}, exitUsage, src + " is both an input and the output", ""},
	}
	for _, tc := range tests {
		code, stdout, errs := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.has) || !strings.Contains(stdout, tc.hasO) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d, %q, %q", tc.args, code, stdout, errs, tc.code, tc.hasO, tc.has)
		}
	}
	if got, err := os.ReadFile(src); err != nil || len(got) != len(whole) {
		t.Errorf("the input of convert IN IN is now %d bytes (%v); want it untouched (%d)", len(got), err, len(whole))
	}
	if code, rep, _ := runCLI(t, "analyze", out); code != exitOK || !strings.Contains(rep, "3 events") {
		t.Errorf("the torn recording written again: exit %d\n%.300s", code, rep)
	}
}

// convert of a job whose rank recording is torn before its meta says how many recordings it
// merged and how many it left out, not how many it was given.
func TestConvertCountsRanksMerged(t *testing.T) {
	dir := t.TempDir()
	r0, r1, r2 := filepath.Join(dir, "rank0-h-10.xfr"), filepath.Join(dir, "rank1-h-11.xfr"), filepath.Join(dir, "rank2-h-12.xfr")
	writeRankRecording(t, r0, 0, 10, 5e9)
	writeRankRecording(t, r1, 1, 11, 5e9)
	writeRankRecording(t, r2, 2, 12, 5e9)
	whole, err := os.ReadFile(r2)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r2, whole[:100], 0o644); err != nil { // torn in its meta chunk
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "job.xfr")
	tests := []struct {
		in   []string
		want string
	}{
		{[]string{dir}, "(2 per-rank recordings merged, 1 left out)"},
		{[]string{r0, r1, r2}, "(2 per-rank recordings merged, 1 left out)"},
		{[]string{r2, r0}, "(1 per-rank recording merged, 1 left out)"},
	}
	for _, tc := range tests {
		args := append(append([]string{"convert"}, tc.in...), out)
		code, stdout, errs := runCLI(t, args...)
		if code != exitOK || !strings.Contains(stdout, tc.want) || !strings.Contains(errs, r2+": torn tail") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d, %q and the tear of %s", args, code, stdout, errs, exitOK, tc.want, r2)
		}
	}
}

// A job's per-rank recordings merged into one by convert keep how the ranks' runs ended and what
// their plugins dropped: analyze of the merged file reports the ended reason and dropped events
// that replay and analyze of the ranks' directory report, and so does a merged file converted
// again.
func TestConvertRanksKeepOutcome(t *testing.T) {
	dir := t.TempDir()
	writeRankEnded(t, filepath.Join(dir, "rank0-h-10.xfr"), 0, 10, 5e9, "", 3)
	writeRankEnded(t, filepath.Join(dir, "rank1-h-11.xfr"), 1, 11, 5e9, "watchdog: all_reduce op 2 waited 2.00 s", 5)
	merged := filepath.Join(t.TempDir(), "job.xfr")
	if code, out, errs := runCLI(t, "convert", dir, merged); code != exitOK {
		t.Fatalf("convert %s %s: exit %d %s %s", dir, merged, code, out, errs)
	}
	again := filepath.Join(t.TempDir(), "again.xfr")
	if code, out, errs := runCLI(t, "convert", merged, again); code != exitOK {
		t.Fatalf("convert %s %s: exit %d %s %s", merged, again, code, out, errs)
	}
	keys := func(args ...string) map[string]any {
		t.Helper()
		code, out, errs := runCLI(t, args...)
		if code != exitOK {
			t.Fatalf("%v: exit %d %s", args, code, errs)
		}
		var rep map[string]any
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return map[string]any{"ended": rep["ended"], "dropped_events": rep["dropped_events"]}
	}
	want := keys("replay", "--headless", "--json", dir)
	if want["ended"] == nil || !strings.Contains(want["ended"].(string), "watchdog: all_reduce op 2 waited 2.00 s") || want["dropped_events"] != 8.0 {
		t.Fatalf("replay of %s: %v; want rank 1's watchdog and 8 dropped events", dir, want)
	}
	for _, args := range [][]string{
		{"analyze", "--json", dir},
		{"analyze", "--json", merged},
		{"replay", "--headless", "--json", merged},
		{"analyze", "--json", again},
	} {
		if got := keys(args...); !reflect.DeepEqual(got, want) {
			t.Errorf("%v: %v; want %v, as replay of the ranks' directory", args, got, want)
		}
	}
}
