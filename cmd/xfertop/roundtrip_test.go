package main

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
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
