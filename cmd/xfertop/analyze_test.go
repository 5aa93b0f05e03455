package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/report"
)

func analyzeJSON(t *testing.T, args ...string) *report.Report {
	t.Helper()
	code, out, errs := runCLI(t, append([]string{"analyze", "--json"}, args...)...)
	if code != exitOK {
		t.Fatalf("analyze %v: exit %d: %s", args, code, errs)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// testdata/hta_small.json is a Kineto trace small enough to work out Holistic Trace Analysis's
// numbers by hand. Times in µs; stream 7 holds gemm_a [10,30) launched at 1, gemm_b [30,50) at 2,
// relu [70,90) at 60, add [150,160) at 80, late [250,260) at 210; stream 8 small_a [100,110) at 96
// and small_b [110.01,120) at 97; stream 9 a memcpy [100,110); stream 20 an NCCL all-reduce [20,60).
//
// Idle (HTA: consecutive ops per stream, start − previous end): stream 7: gemm_b 0 (no gap);
// relu 20 µs launched at 60 > 50 → host wait; add 60 µs launched at 80 < 90 and ≥ 30 ns → other;
// late 90 µs launched at 210 > 160 → host wait. Stream 8: 10 ns launched before 110 → kernel wait.
// Host wait 110 µs, other 60 µs, kernel wait 10 ns.
//
// Temporal breakdown: span 10 → 260 = 250 µs; busy union [10,60) [70,90) [100,110) [110.01,120)
// [150,160) [250,260) = 109.99 µs; idle 140.01 µs = 56.0%; compute (non-NCCL kernels)
// 99.99 µs = 40.0%; non-compute 10 µs = 4.0%.
//
// Overlap: communication = the NCCL kernel [20,60) = 40 µs (the memcpy is memory, not
// communication); computation overlapping it [20,50) = 30 µs: 75%.
//
// --like-hta keeps, as HTA does with two or more steps, the ops launched before the last step
// begins: `late` (launched at 210, after step 3 began at 200) goes. It also rounds timestamps to
// whole µs as HTA does (start up, end down): small_b becomes [111,120), a 1 µs gap after small_a.
// Host wait 20 µs, other 60 µs, kernel wait 1 µs (below 30 µs); span 10 → 160 = 150 µs, busy
// 99 µs, idle 51 µs = 34%.
func TestAnalyzeMatchesHTA(t *testing.T) {
	path := filepath.Join("testdata", "hta_small.json")
	r := analyzeJSON(t, path)
	wantCauses := map[string]int64{"host_wait": 110_000, "kernel_wait": 10, "other": 60_000, "event_wait": 0, "barrier_wait": 0, "peer_wait": 0}
	for k, v := range wantCauses {
		if r.Idle.ByCause[k] != v {
			t.Errorf("idle %s = %d ns; HTA gives %d", k, r.Idle.ByCause[k], v)
		}
	}
	if r.Idle.StreamNs != 170_010 {
		t.Errorf("stream idle total %d; want 170010", r.Idle.StreamNs)
	}
	if len(r.Idle.Devices) != 1 {
		t.Fatalf("devices %+v", r.Idle.Devices)
	}
	d := r.Idle.Devices[0]
	if d.IdleNs != 140_010 || d.IdlePct != 56.0 || d.ComputePct != 40.0 || d.NonCompPct != 4.0 {
		t.Errorf("temporal breakdown %+v; HTA gives idle 140010 ns 56.0%%, compute 40.0%%, non-compute 4.0%%", d)
	}
	if *r.Overlap.CommComputePct != 75 {
		t.Errorf("overlap %.2f%%; HTA gives 75%%", *r.Overlap.CommComputePct)
	}
	if r.Transfers.ByKind["h2d"].Count != 1 || *r.Transfers.ByKind["h2d"].GBps != 100 {
		t.Errorf("h2d %+v; want 1 copy of 1 MB in 10 µs = 100 GB/s", r.Transfers.ByKind["h2d"])
	}
	if len(r.Collectives) != 1 || r.Collectives[0].Op != "all_reduce" || r.Steps.Count != 3 {
		t.Errorf("collectives %+v, steps %+v", r.Collectives, r.Steps)
	}

	like := analyzeJSON(t, "--like-hta", path)
	if like.Idle.ByCause["host_wait"] != 20_000 || like.Idle.ByCause["other"] != 60_000 || like.Idle.ByCause["kernel_wait"] != 1_000 {
		t.Errorf("--like-hta idle %v", like.Idle.ByCause)
	}
	if d := like.Idle.Devices[0]; d.IdleNs != 51_000 || d.IdlePct != 34 {
		t.Errorf("--like-hta breakdown %+v; want idle 51000 ns, 34%%", d)
	}
}

func TestRecordReplayConvertCLI(t *testing.T) {
	dir := t.TempDir()
	xfr := filepath.Join(dir, "p.xfr")
	code, live, errs := runCLI(t, "run", "--headless", "--json", "--steps", "2", "--record", xfr)
	if code != exitOK {
		t.Fatalf("run --record: %d %s", code, errs)
	}
	code, replayed, errs := runCLI(t, "replay", xfr, "--headless", "--json")
	if code != exitOK || replayed != live {
		t.Fatalf("replay: exit %d (%s); same report as the run: %v", code, errs, replayed == live)
	}
	code, analyzed, _ := runCLI(t, "analyze", "--json", xfr)
	if code != exitOK || analyzed != live {
		t.Errorf("analyze of a recording differs from the run's report")
	}
	js := filepath.Join(dir, "p.json")
	if code, out, errs := runCLI(t, "convert", xfr, js); code != exitOK || !strings.Contains(out, "Chrome trace JSON") {
		t.Fatalf("convert to JSON: %d %s %s", code, out, errs)
	}
	back := filepath.Join(dir, "back.xfr")
	if code, _, errs := runCLI(t, "convert", js, back); code != exitOK {
		t.Fatalf("convert back: %d %s", code, errs)
	}
	code, again, errs := runCLI(t, "analyze", "--json", back)
	if code != exitOK {
		t.Fatalf("analyze round trip: %d %s", code, errs)
	}
	var a, b map[string]any
	_ = json.Unmarshal([]byte(live), &a)
	_ = json.Unmarshal([]byte(again), &b)
	for _, k := range []string{"steps", "transfers", "collectives", "comm_cache", "idle", "overlap", "events"} {
		ja, _ := json.Marshal(a[k])
		jb, _ := json.Marshal(b[k])
		if string(ja) != string(jb) {
			t.Errorf("%s changed through .xfr → JSON → .xfr:\n%s\n%s", k, ja, jb)
		}
	}
	// A Kineto trace converts to a recording that analyzes like the trace.
	kxfr := filepath.Join(dir, "k.xfr")
	if code, _, errs := runCLI(t, "convert", filepath.Join("testdata", "hta_small.json"), kxfr); code != exitOK {
		t.Fatalf("convert kineto: %s", errs)
	}
	if r := analyzeJSON(t, kxfr); r.Idle.StreamNs != 170_010 || *r.Overlap.CommComputePct != 75 {
		t.Errorf("Kineto → .xfr lost HTA mode: stream idle %d overlap %v", r.Idle.StreamNs, *r.Overlap.CommComputePct)
	}
}

func TestFileErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "g.xfr")
	if code, _, errs := runCLI(t, "run", "--headless", "--steps", "3", "--scenario", "overlap", "--record", good); code != exitOK {
		t.Fatal(errs)
	}
	data, _ := os.ReadFile(good)
	bad := filepath.Join(dir, "bad.xfr")
	flipped := append([]byte(nil), data...)
	flipped[200] ^= 0xff
	_ = os.WriteFile(bad, flipped, 0o644)
	newer := append([]byte(nil), data...)
	newer[8] = 9
	future := filepath.Join(dir, "future.xfr")
	_ = os.WriteFile(future, newer, 0o644)
	// Torn inside its first chunk of events, wherever the recorder's timer cut the chunks: nothing
	// complete is left but the header.
	torn := filepath.Join(dir, "torn.xfr")
	_ = os.WriteFile(torn, data[:firstEventsChunk(t, good)+20], 0o644)
	notjson := filepath.Join(dir, "x.json")
	_ = os.WriteFile(notjson, []byte(`{"traceEvents": [ {"ph": "X"`), 0o644)
	// A recording with a header and nothing else is not an empty report: it says so.
	empty := filepath.Join(dir, "empty.xfr")
	w, err := recordings.Create(empty)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteMeta(recordings.Meta{Source: "sim"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	longName := filepath.Join(dir, "long.json")
	_ = os.WriteFile(longName, []byte(`{"traceEvents": [{"name": "`+strings.Repeat("k", 2000)+`"}]}`), 0o644)
	overflow := filepath.Join(dir, "overflow.json")
	_ = os.WriteFile(overflow, []byte(`{"traceEvents": [`+
		`{"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD","ts":10,"dur":1,"args":{"device":0,"stream":7,"bytes":1024}},`+
		`{"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD","ts":20,"dur":1,"args":{"device":0,"stream":7,"bytes":9223372036854775807}},`+
		`{"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD","ts":30,"dur":1,"args":{"device":0,"stream":7,"bytes":9223372036854775807}}]}`), 0o644)
	tests := []struct {
		args   []string
		code   int
		errHas string
	}{
		{[]string{"replay", bad, "--headless"}, exitData, bad + ": corrupt recording at byte offset"},
		{[]string{"replay", future, "--headless"}, exitData, "recorded by a newer xfertop (format version 9; this xfertop reads up to 2)"},
		// Torn before its first chunk ended: the warning says so, and nothing was recorded.
		{[]string{"replay", torn, "--headless"}, exitData, "warning: " + torn + ": torn tail at byte offset"},
		{[]string{"replay", torn, "--headless"}, exitData, torn + ": no events"},
		{[]string{"replay", empty, "--headless"}, exitData, empty + ": no events"},
		{[]string{"analyze", empty}, exitData, empty + ": no events"},
		{[]string{"replay", "--headless", filepath.Join(dir, "none.xfr")}, exitUsage, "no such file"},
		{[]string{"replay"}, exitUsage, "give a recording"},
		{[]string{"analyze", notjson}, exitData, notjson + ": the JSON ends before it is complete"},
		{[]string{"convert", good}, exitUsage, "usage: xfertop convert IN... OUT"},
		{[]string{"analyze", "--max-token-bytes", "1KiB", longName}, exitData,
			longName + ": the string at byte offset 26 is longer than 1 KiB: that is the limit for one token (raise it with --max-token-bytes)"},
		{[]string{"convert", longName, filepath.Join(dir, "o.xfr"), "--max-input-bytes", "1KiB"}, exitData,
			longName + ": more than 1 KiB of JSON (after decompression): that is the input limit (raise it with --max-input-bytes)"},
		{[]string{"analyze", "--max-input-bytes", "0", longName}, exitUsage, `invalid value "0" for flag -max-input-bytes: "0": give a size above 0`},
		{[]string{"analyze", overflow}, exitOK, "xfertop: warning: " + overflow + `: traceEvents[1] "Memcpy HtoD": args.bytes 9223372036854775807 is out of range (0 to 1 TiB): taken as unknown`},
		{[]string{"convert", good, filepath.Join(dir, "o.csv")}, exitUsage, "write it to a .json file (Chrome trace) or a .xfr recording"},
	}
	for _, tc := range tests {
		code, _, errs := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.errHas) {
			t.Errorf("xfertop %v: exit %d, stderr %q; want %d and %q", tc.args, code, errs, tc.code, tc.errHas)
		}
	}
	// Overflowing byte counts never reach the totals: only the valid 1024 bytes are counted.
	if r := analyzeJSON(t, overflow); r.Transfers.Bytes != 1024 {
		t.Errorf("transfers.bytes %d; want 1024", r.Transfers.Bytes)
	}
	// --salvage reads past the damage.
	if code, out, errs := runCLI(t, "replay", bad, "--headless", "--salvage"); code != exitOK || !strings.Contains(errs, "skipped") || out == "" {
		t.Errorf("--salvage: exit %d, stderr %q", code, errs)
	}
}

// The two sampled ranks of Holistic Trace Analysis's test data: per rank overlap as HTA reports it,
// over every op (14.95% and 19.93%) and over HTA's default selection with --like-hta (11.81% and
// 20.05%).
func TestAnalyzeSampledRanksLikeHTA(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "shared", "data", "kineto")
	r0, r1 := filepath.Join(dir, "sampled_rank-0.json.gz"), filepath.Join(dir, "sampled_rank-1.json.gz")
	if _, err := os.Stat(r0); err != nil {
		t.Skipf("real traces not available (%s missing): they live in ../shared/data beside the checkout", r0)
	}
	for _, tc := range []struct {
		args []string
		want [2]float64
	}{
		{[]string{r0, r1}, [2]float64{14.95, 19.93}},
		{[]string{"--like-hta", r0, r1}, [2]float64{11.81, 20.05}},
	} {
		r := analyzeJSON(t, tc.args...)
		if len(r.Idle.Devices) != 2 {
			t.Fatalf("%v: %d devices", tc.args, len(r.Idle.Devices))
		}
		for i, d := range r.Idle.Devices {
			if d.OverlapPct == nil || *d.OverlapPct != tc.want[i] {
				t.Errorf("%v: rank %d overlap %v; HTA gives %.2f%%", tc.args, i, d.OverlapPct, tc.want[i])
			}
		}
	}
}

// firstEventsChunk returns the offset of a recording's first chunk of events.
func firstEventsChunk(t *testing.T, path string) int64 {
	t.Helper()
	r, err := recordings.Open(path, recordings.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, e := range r.Index() {
		if e.Events > 0 {
			return e.Offset
		}
	}
	t.Fatal("the recording has no events chunk")
	return 0
}

// What a source does not record is null in JSON and "—" in text, never 0: a Kineto trace has no
// seed, communicator cache, group launches, or group and message size for its NCCL kernel. A
// simulated run records them all: numbers.
func TestUnknownFieldsCLI(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		unknown bool
	}{
		{"kineto trace", []string{"analyze", filepath.Join("testdata", "hta_small.json")}, true},
		{"simulated run", []string{"run", "--headless", "--scenario", "allreduce-sweep", "--steps", "1"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(t, append(tc.args, "--json")...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errs)
			}
			var r map[string]any
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			colls, _ := r["collectives"].([]any)
			if len(colls) == 0 {
				t.Fatalf("no collectives: %s", out)
			}
			fields := map[string]any{"seed": r["seed"]}
			for _, k := range []string{"hits", "misses", "evictions", "init_ns_total"} {
				fields["comm_cache."+k] = r["comm_cache"].(map[string]any)[k]
			}
			for _, k := range []string{"launches", "ops"} {
				fields["groups."+k] = r["groups"].(map[string]any)[k]
			}
			for _, k := range []string{"ranks", "bytes", "size_class"} {
				fields["collectives[0]."+k] = colls[0].(map[string]any)[k]
			}
			for k, v := range fields {
				if _, number := v.(float64); tc.unknown == number || (!tc.unknown && v == nil) {
					t.Errorf("%s = %v; want %s", k, v, map[bool]string{true: "null", false: "a number"}[tc.unknown])
				}
			}
			_, text, _ := runCLI(t, tc.args...)
			for _, w := range []string{", seed —,", "Communicator cache: —", "Groups: —", "all_reduce      —        —"} {
				if strings.Contains(text, w) != tc.unknown {
					t.Errorf("text has %q: %v; want %v:\n%s", w, !tc.unknown, tc.unknown, text)
				}
			}
		})
	}
}

// analyze takes --headless, as run, replay and whatif do (it always prints a report): a command
// line that works for one works for the other, with the same report.
func TestAnalyzeHeadless(t *testing.T) {
	in := filepath.Join("testdata", "hta_small.json")
	code, want, errs := runCLI(t, "analyze", in)
	if code != exitOK {
		t.Fatalf("analyze: exit %d: %s", code, errs)
	}
	for _, args := range [][]string{{"analyze", "--headless", in}, {"analyze", in, "--headless"}} {
		code, out, errs := runCLI(t, args...)
		if code != exitOK || out != want {
			t.Errorf("%q: exit %d (%s), report differs: %v", args, code, errs, out != want)
		}
	}
}

// NCCL Inspector logs of which some rank's records are missing (one file of a two-rank log): the
// collectives whose other rank never reported are counted incomplete when the input ends, and
// shown as rows of their own, in the JSON and the text alike, with the ranks seen of those
// expected and the figures of those ranks as bounds (≥ time, ≤ bandwidths), rather than
// vanishing from both: node0's rank 0 ran the 1 GiB all_reduce in 10.0 ms.
func TestAnalyzeInspectorRankMissing(t *testing.T) {
	dir := filepath.Join("..", "..", "importers", "inspector", "testdata", "v2.28")
	one := filepath.Join(dir, "node0-pid1000.log")
	for _, tc := range []struct {
		in            []string
		incomplete    int
		rows, partial int
		text          string // what the text says of them; "" for nothing
		row           string // a line of the table
	}{
		{[]string{dir}, 0, 2, 0, "", "all_reduce      2    1 GiB      1   10.0 ms"},
		{[]string{one}, 2, 0, 2, "2 collectives never heard from every rank: the rows whose ranks read seen/expected",
			"all_reduce    1/2    1 GiB      1  ≥ 10.0 ms    ≤ 107.37    ≤ 107.37"},
	} {
		code, out, errs := runCLI(t, append([]string{"analyze", "--json"}, tc.in...)...)
		var rep struct {
			Collectives []json.RawMessage `json:"collectives"`
			Partial     []struct {
				Op        string   `json:"op"`
				Ranks     int      `json:"ranks"`
				RanksSeen []int    `json:"ranks_seen"`
				TimeNs    *int64   `json:"time_ns_total"`
				BusBW     *float64 `json:"busbw_gbps"`
			} `json:"collectives_partial"`
			Incomplete *int `json:"collectives_incomplete"`
		}
		if code != exitOK || json.Unmarshal([]byte(out), &rep) != nil || rep.Incomplete == nil || *rep.Incomplete != tc.incomplete ||
			len(rep.Collectives) != tc.rows || len(rep.Partial) != tc.partial {
			t.Errorf("analyze --json %v: exit %d, %d rows, %d partial, collectives_incomplete %v; want %d, %d rows, %d partial, %d\n%s",
				tc.in, code, len(rep.Collectives), len(rep.Partial), rep.Incomplete, exitOK, tc.rows, tc.partial, tc.incomplete, errs)
		}
		for _, p := range rep.Partial {
			if p.Ranks != 2 || len(p.RanksSeen) != 2 || p.RanksSeen[1] != 1 || p.TimeNs == nil || p.BusBW == nil {
				t.Errorf("analyze --json %v: partial row %+v; want 1 of 2 ranks seen, time and busbw of it", tc.in, p)
			}
		}
		code, out, _ = runCLI(t, append([]string{"analyze"}, tc.in...)...)
		if says := strings.Contains(out, "never heard from every rank"); code != exitOK || says != (tc.text != "") || !strings.Contains(out, tc.text) || !strings.Contains(out, tc.row) {
			t.Errorf("analyze %v: exit %d; want the text to say %q and show %q\n%s", tc.in, code, tc.text, tc.row, out)
		}
	}
}
