package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/importers/nsys/nsystest"
)

// TestUnknownSizeLeftOutOfRates: a copy whose byte count the source gives out of range is of
// unknown size. Each importer's case holds one copy of a known size (nsys: 4096 B in 1 µs; Kineto:
// 4,096,000 B in 1 ms) and one of unknown size that took longer (1 ms; 5 ms), in the same
// direction: the rate is the known copy's alone (the unknown one's time divided into the known
// bytes would pull it down 1000× and 6×), the unknown
// copy is a row of its own with its size class and bytes null (text: "—"), and the payloads are
// lower bounds.
func TestUnknownSizeLeftOutOfRates(t *testing.T) {
	dir := t.TempDir()
	export := filepath.Join(dir, "badbytes.sqlite")
	rows := append(nsystest.OldRows(), `INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (5000030000, 5001030000, 0, 1, 7, 0, `+
		itoa(nsystest.GPID)+`, -5, 2, 2, 0, 0, 0)`)
	if err := nsystest.Write(export, nsystest.OldSchema, rows...); err != nil {
		t.Fatal(err)
	}
	trace := filepath.Join(dir, "hugebytes.json")
	if err := os.WriteFile(trace, []byte(`{"traceEvents":[
 {"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD","pid":0,"tid":7,"ts":101,"dur":1000,"args":{"device":0,"stream":7,"bytes":4096000}},
 {"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD","pid":0,"tid":7,"ts":2000,"dur":5000,"args":{"device":0,"stream":7,"bytes":99999999999999999999999}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, kind string
		bytes            float64 // the known copy's
		gbps             float64 // its rate
		payload          string  // the text's Transfers line (nsys: with the export's 1 MiB peer copy)
	}{
		{"nsys bytes -5", export, "d2h", 4096, 4.1, "≥ 1.004 MiB payload, 1 of them of unknown size"},
		{"kineto bytes beyond 2^62", trace, "h2d", 4096000, 4.1, "≥ 3.906 MiB payload, 1 of them of unknown size"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(t, "analyze", "--json", tc.path)
			if code != exitOK || !strings.Contains(errs, "taken as unknown") {
				t.Fatalf("analyze: exit %d, stderr %q", code, errs)
			}
			var raw struct {
				Transfers struct {
					UnknownSize int64                        `json:"unknown_size"`
					ByKind      map[string]map[string]any    `json:"by_kind"`
					BySize      []map[string]json.RawMessage `json:"by_size"`
				} `json:"transfers"`
				Links struct {
					MovedLowerBound bool `json:"moved_lower_bound"`
				} `json:"links"`
			}
			if err := json.Unmarshal([]byte(out), &raw); err != nil {
				t.Fatal(err)
			}
			k := raw.Transfers.ByKind[tc.kind]
			if k["gbps"] != tc.gbps || k["unknown_size"] != 1.0 || k["count"] != 2.0 || k["bytes"] != tc.bytes {
				t.Errorf("%s: %v; want gbps %v over the known copy, 1 of 2 of unknown size, %v bytes", tc.kind, k, tc.gbps, tc.bytes)
			}
			if raw.Transfers.UnknownSize != 1 || !raw.Links.MovedLowerBound {
				t.Errorf("transfers.unknown_size %d, links.moved_lower_bound %v; want 1, true", raw.Transfers.UnknownSize, raw.Links.MovedLowerBound)
			}
			var unknownRow map[string]json.RawMessage
			for _, r := range raw.Transfers.BySize {
				if string(r["kind"]) == `"`+tc.kind+`"` && string(r["size_class"]) == "null" {
					unknownRow = r
				}
			}
			if unknownRow == nil || string(unknownRow["bytes"]) != "null" || string(unknownRow["gbps"]) != "null" || string(unknownRow["count"]) != "1" {
				t.Errorf("the %s row of unknown size: %v; want size_class, bytes and gbps null, count 1", tc.kind, unknownRow)
			}
			_, text, _ := runCLI(t, "analyze", tc.path)
			for _, want := range []string{tc.payload, "are left out of GB/s"} {
				if !strings.Contains(text, want) {
					t.Errorf("text lacks %q:\n%s", want, text)
				}
			}
			for _, line := range strings.Split(text, "\n") {
				if f := strings.Fields(line); len(f) > 3 && f[0] == "—" && f[1] == "1" && f[2] != "—" {
					t.Errorf("the row of unknown size shows payload %q, not —: %q", f[2], line)
				}
				if strings.Contains(line, " 0 B ") && strings.HasPrefix(strings.TrimSpace(line), "0 B") {
					t.Errorf("a size class of 0 B: %q", line)
				}
			}
		})
	}
}
