package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/xfertop/xfertop/importers/nsys/nsystest"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// A recording converted to Chrome JSON and back reports what the recording does: the export carries
// the run's description (source, scenario, knobs, seed, GPUs per host, link peaks) in
// xfertopMetadata and every event's fields in its args, and the import reads both back. The report
// keys listed in lost are what the Chrome format does not carry: how the run ended (a recording's
// outcome) is not part of the run's description.
func TestChromeRoundTripReport(t *testing.T) {
	tests := []struct {
		name string
		run  []string
		lost []string
	}{
		{"two hosts: links split between NVLink and NICs by the host layout", []string{"--scenario", "pipeline", "--steps", "2"}, nil},
		{"knobs set on the command line", []string{"--scenario", "crosshost", "--steps", "2", "--set", "prepared=on", "--seed", "7"}, nil},
		{"a run the watchdog ended", []string{"--scenario", "deadlock"}, []string{"ended"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			rec, trace, back := filepath.Join(dir, "run.xfr"), filepath.Join(dir, "run.json"), filepath.Join(dir, "back.xfr")
			runCLI(t, append([]string{"run", "--headless", "--record", rec}, tc.run...)...)
			for _, args := range [][]string{{"convert", rec, trace}, {"convert", trace, back}} {
				if code, _, errs := runCLI(t, args...); code != exitOK {
					t.Fatalf("%v: exit %d: %s", args, code, errs)
				}
			}
			want, got := reportOf(t, rec), reportOf(t, back)
			for _, k := range tc.lost {
				if _, ok := want[k]; !ok {
					t.Errorf("the original report has no %q: the case no longer shows what the format loses", k)
				}
				delete(want, k)
			}
			if want["gpus_per_host"] == nil || want["knobs"] == nil {
				t.Fatalf("the original report lacks gpus_per_host or knobs: %v, %v", want["gpus_per_host"], want["knobs"])
			}
			for _, k := range sortedKeys(want, got) {
				if !reflect.DeepEqual(got[k], want[k]) {
					g, _ := json.Marshal(got[k])
					w, _ := json.Marshal(want[k])
					t.Errorf("report %q after the round trip:\n%.600s\nwant:\n%.600s", k, g, w)
				}
			}
		})
	}
}

// reportOf is the JSON report of replaying the recording at path, section by section.
func reportOf(t *testing.T, path string) map[string]any {
	t.Helper()
	_, out, errs := runCLI(t, "replay", path, "--headless", "--json")
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("replay %s: not JSON: %v\n%s", path, err, errs)
	}
	return r
}

// sortedKeys is the union of the maps' keys, sorted.
func sortedKeys(a, b map[string]any) []string {
	seen := map[string]bool{}
	for k := range a {
		seen[k] = true
	}
	for k := range b {
		seen[k] = true
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Every source's recording, converted to Chrome JSON and back, holds the same events: the export
// carries each event's fields in its args and the import reads them back exactly, the op ids of
// Flight Recorder and plugin sequence ops (top bit set) included.
func TestChromeRoundTripEvents(t *testing.T) {
	dir := t.TempDir()
	ranks := filepath.Join(dir, "ranks")
	if err := os.Mkdir(ranks, 0o755); err != nil {
		t.Fatal(err)
	}
	writeRankRecording(t, filepath.Join(ranks, "rank0-h-10.xfr"), 0, 10, 5e9)
	writeRankRecording(t, filepath.Join(ranks, "rank1-h-11.xfr"), 1, 11, 5e9+3e3)
	export := filepath.Join(dir, "small.sqlite")
	if err := nsystest.WriteLarge(export, 64, 16); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run.xfr")
	runCLI(t, "run", "--headless", "--scenario", "crosshost", "--steps", "2", "--record", run)
	sources := []struct{ name, in string }{
		{"simulated run", run},
		{"flight recorder (sequence op ids)", filepath.Join("..", "..", "importers", "flightrecorder", "testdata", "pp_hang")},
		{"nccl ras", filepath.Join("..", "..", "importers", "ras", "testdata", "hang.json")},
		{"plugin rank recordings (attach)", ranks},
		{"kineto", filepath.Join("testdata", "hta_small.json")},
		{"nsys", export},
		{"nccl inspector", filepath.Join("..", "..", "importers", "inspector", "testdata", "v2.32")},
	}
	for i, src := range sources {
		t.Run(src.name, func(t *testing.T) {
			rec := filepath.Join(dir, fmt.Sprintf("s%d.xfr", i))
			if src.in == run {
				rec = run
			} else if code, _, errs := runCLI(t, "convert", src.in, rec); code != exitOK {
				t.Fatalf("convert %s: exit %d: %s", src.in, code, errs)
			}
			trace, back := filepath.Join(dir, fmt.Sprintf("s%d.json", i)), filepath.Join(dir, fmt.Sprintf("s%d-back.xfr", i))
			for _, args := range [][]string{{"convert", rec, trace}, {"convert", trace, back}} {
				if code, _, errs := runCLI(t, args...); code != exitOK {
					t.Fatalf("%v: exit %d: %s", args, code, errs)
				}
			}
			want, got := eventsOf(t, rec), eventsOf(t, back)
			if len(want) == 0 {
				t.Fatal("the source has no events: the case shows nothing")
			}
			if len(got) != len(want) {
				t.Fatalf("%d events after the round trip; want %d", len(got), len(want))
			}
			for j := range want {
				if got[j] != want[j] {
					t.Errorf("event %d after the round trip:\n%+v\nwant:\n%+v", j, got[j], want[j])
				}
			}
		})
	}
}

// labelled is an event with its label as text, so events of two recordings compare whatever ids
// their string tables gave the labels.
type labelled struct {
	timeline.Event
	Text string
}

// eventsOf is the events of the recording at path, in order of start (the export sorts them so).
func eventsOf(t *testing.T, path string) []labelled {
	t.Helper()
	rec, err := recordings.ReadFile(path, recordings.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]labelled, len(rec.Events))
	for i, e := range rec.Events {
		text := rec.Strings.Lookup(e.Label)
		e.Label = 0
		out[i] = labelled{e, text}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}
