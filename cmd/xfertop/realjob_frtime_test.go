package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRealJobFlightRecorderUnknownTimes: the real job's Flight Recorder dumps hold entries with no
// time of their own (not retired when dumped, no duration_ms; every entry of the one-rank job).
// analyze counts them (unknown_time) and shows no time of 0 for them: each time figure of a
// collective or transfer row is a positive number, or null where no op of the row has a time, and
// the text has no "0 s" in its tables, where it showed one for every op of the one-rank job.
func TestRealJobFlightRecorderUnknownTimes(t *testing.T) {
	for _, c := range []struct {
		step         string
		ranks        int
		collUnknown  int64 // instances of unknown time
		transUnknown int64 // sends and receives of unknown time
		gapsNull     bool  // no op's time known: stream_gaps_ns null
	}{
		{"torch", 1, 30, 6, true},
		{"torch2", 2, 11, 4, false},
	} {
		t.Run(c.step, func(t *testing.T) {
			args := []string{"analyze", "--json"}
			for r := range c.ranks {
				args = append(args, filepath.Join(realJob, c.step, "fr", fmt.Sprintf("nccl_trace_rank_%d", r)))
			}
			code, out, errs := runCLI(t, args...)
			if code != exitOK {
				t.Fatalf("analyze: exit %d: %s", code, errs)
			}
			var r struct {
				Collectives []map[string]any `json:"collectives"`
				Transfers   struct {
					ByKind map[string]map[string]any `json:"by_kind"`
					BySize []map[string]any          `json:"by_size"`
				} `json:"transfers"`
				Idle map[string]any `json:"idle"`
			}
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			check := func(what string, row map[string]any, keys ...string) int64 {
				count, unknown := row["count"].(float64), row["unknown_time"].(float64)
				for _, k := range keys {
					v, ok := row[k]
					switch {
					case !ok:
						t.Errorf("%s: no %s", what, k)
					case v == nil && unknown < count:
						t.Errorf("%s: %s null with %v of %v ops timed", what, k, count-unknown, count)
					case v != nil && unknown == count:
						t.Errorf("%s: %s = %v with no op's time known; want null", what, k, v)
					case v != nil && v.(float64) <= 0:
						t.Errorf("%s: %s = %v; want a time above 0 or null", what, k, v)
					}
				}
				return int64(unknown)
			}
			var colls, trans int64
			for _, row := range r.Collectives {
				colls += check(fmt.Sprintf("collective %v %v", row["op"], row["bytes"]), row, "time_ns_total", "time_ns_p50", "time_ns_p99")
			}
			for k, row := range r.Transfers.ByKind {
				if row["count"].(float64) > 0 {
					trans += check("transfers "+k, row, "busy_ns", "time_ns_p50", "time_ns_p99")
				}
			}
			for _, row := range r.Transfers.BySize {
				check(fmt.Sprintf("transfers %v %v", row["kind"], row["size_class"]), row, "busy_ns", "time_ns_p50", "time_ns_p99")
			}
			if colls != c.collUnknown || trans != c.transUnknown {
				t.Errorf("unknown_time: %d collective instances, %d transfers; want %d, %d", colls, trans, c.collUnknown, c.transUnknown)
			}
			if g, ok := r.Idle["stream_gaps_ns"]; !ok || (g == nil) != c.gapsNull {
				t.Errorf("idle.stream_gaps_ns = %v; want null %v", g, c.gapsNull)
			}

			textArgs := append([]string{"analyze"}, args[2:]...) // without --json
			code, text, errs := runCLI(t, textArgs...)
			if code != exitOK {
				t.Fatalf("analyze (text): exit %d: %s", code, errs)
			}
			zero := regexp.MustCompile(`(^|\s)0 s(\s|$)`)
			for _, line := range strings.Split(text, "\n") {
				if zero.MatchString(line) {
					t.Errorf("text shows a time of 0: %q", line)
				}
			}
			for _, want := range []string{fmt.Sprintf("%d ops of unknown time", c.transUnknown), fmt.Sprintf("%d instances of unknown time", c.collUnknown)} {
				if !strings.Contains(text, want) {
					t.Errorf("text lacks %q:\n%s", want, text)
				}
			}
		})
	}
}
