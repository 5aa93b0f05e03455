package session

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/probes/nvml"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/units"
)

// runReport runs a scenario to completion and returns its report.
func runReport(t *testing.T, cfg Config) (*report.Report, Outcome) {
	t.Helper()
	p, err := Prepare(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return p.Report(out), out
}

// pipeline reproduces the published effect of high-priority D2D streams: the step time with high
// priority is 15–25% below normal, and each is within 5% of the published figure (336 ms → 273 ms).
func TestPipelinePriorityEffect(t *testing.T) {
	high, _ := runReport(t, Config{Scenario: "pipeline", Sets: map[string]string{"d2d_priority": "high"}})
	normal, _ := runReport(t, Config{Scenario: "pipeline", Sets: map[string]string{"d2d_priority": "normal"}})
	cut := 1 - float64(*high.Steps.P50Ns)/float64(*normal.Steps.P50Ns)
	t.Logf("pipeline step p50: high %s, normal %s (%.1f%% lower)", units.Dur(*high.Steps.P50Ns), units.Dur(*normal.Steps.P50Ns), 100*cut)
	if cut < 0.15 || cut > 0.25 {
		t.Errorf("high priority cuts the step by %.1f%%; want 15–25%%", 100*cut)
	}
	for _, s := range []struct {
		name string
		got  int64
		want float64
	}{{"high", *high.Steps.P50Ns, 273e6}, {"normal", *normal.Steps.P50Ns, 336e6}} {
		if d := float64(s.got)/s.want - 1; d < -0.05 || d > 0.05 {
			t.Errorf("%s priority step p50 %s; published %.0f ms ±5%%", s.name, units.Dur(s.got), s.want/1e6)
		}
	}
	if high.Transfers.ByKind["send"].Count == 0 {
		t.Error("no activation sends")
	}
}

// deadlock with cycle=on: the two ranks each receive before they send. The watchdog ends one
// receive; the diagnosis names the cycle, not a rank that never posted, and a replay of the run's
// recording finds the same (the waits the watchdog ended are in the stream).
func TestDeadlockCycle(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "cycle.xfr")
	r, _ := runReport(t, Config{Scenario: "deadlock", Sets: map[string]string{"cycle": "on"}, Record: rec})
	want := "each waits on the next: rank 0 in recv of 16 MiB from 1 (op 2, communicator 1); rank 1 in recv of 16 MiB from 0 (op 1, communicator 1)"
	if len(r.Findings) != 1 || r.Findings[0].Kind != "deadlock" || r.Findings[0].Evidence != want || len(r.Findings[0].Cycle) != 2 {
		t.Fatalf("findings %+v; want one deadlock saying %q", r.Findings, want)
	}
	rp, err := Replay(context.Background(), ReplayConfig{Path: rec})
	if err != nil {
		t.Fatal(err)
	}
	if rep := rp.Report(); len(rep.Findings) != 1 || rep.Findings[0].Evidence != want {
		t.Errorf("replayed findings %+v; want the live run's", rp.Report().Findings)
	}
}

// deadlock ends with the watchdog alert naming the op, both ranks and the bytes.
func TestDeadlockWatchdog(t *testing.T) {
	r, out := runReport(t, Config{Scenario: "deadlock"})
	var wd *engine.WatchdogError
	if !errors.As(out.Ended, &wd) || !out.EndedByAlert() {
		t.Fatalf("outcome %v; want a watchdog error", out.Ended)
	}
	if len(r.Alerts) != 1 {
		t.Fatalf("alerts %+v; want one", r.Alerts)
	}
	a := r.Alerts[0]
	if a.Kind != "watchdog" || a.Bytes != 16<<20 || len(a.Ranks) != 2 || a.Ranks[0] != 0 || a.Ranks[1] != 1 ||
		!strings.Contains(a.Message, "send op") {
		t.Errorf("alert %+v", a)
	}
	if r.Steps.Count != 0 {
		t.Errorf("the failed step was counted: %+v", r.Steps)
	}
	// The blocked send's stream waited for its peer for the watchdog's 2 s, as the timeline shows:
	// the report says so, and rank 0's device sat idle, not "compute 100%".
	if pw := r.Idle.ByCause["peer_wait"]; pw < 1_990_000_000 || pw > 2_010_000_000 {
		t.Errorf("peer wait %d ns; want the 2 s the send waited", pw)
	}
	if len(r.Idle.Devices) == 0 || r.Idle.Devices[0].Device != 0 || r.Idle.Devices[0].IdlePct < 99 {
		t.Errorf("rank 0's breakdown %+v; want it idle while its send waited", r.Idle.Devices)
	}
}

// straggler names the late rank, whichever it is.
func TestStragglerNamed(t *testing.T) {
	for _, rank := range []string{"3", "6"} {
		r, _ := runReport(t, Config{Scenario: "straggler", Sets: map[string]string{"rank": rank}})
		s := r.Barriers.Stragglers
		if len(s) == 0 || s[0].TimesLast != r.Barriers.Count {
			t.Fatalf("rank=%s: stragglers %+v of %d barriers", rank, s, r.Barriers.Count)
		}
		if got := s[0].Rank; got != int32(rank[0]-'0') {
			t.Errorf("rank=%s: straggler is rank %d", rank, got)
		}
		if r.Idle.ByCause["barrier_wait"] == 0 {
			t.Errorf("no barrier wait in idle causes: %v", r.Idle.ByCause)
		}
	}
}

// crosshost: without a cache every transfer creates a communicator; a cache smaller than the
// communicators in use evicts; prepared plans look communicators up once per pairing.
func TestCrosshostCommCache(t *testing.T) {
	on, _ := runReport(t, Config{Scenario: "crosshost"})
	off, _ := runReport(t, Config{Scenario: "crosshost", Sets: map[string]string{"comm_cache": "off"}})
	small, _ := runReport(t, Config{Scenario: "crosshost", Sets: map[string]string{"cache_size": "12"}})
	prep, _ := runReport(t, Config{Scenario: "crosshost", Sets: map[string]string{"prepared": "on"}})
	t.Logf("cache on %+v; off %+v; size 12 %+v; prepared %+v", on.CommCache, off.CommCache, small.CommCache, prep.CommCache)
	// A pair's two directions share one device set: 8 GPU pairs × 2 pairings = 16 communicators.
	if on.CommCache.Misses != 16 || on.CommCache.Evictions != 0 || on.CommCache.Hits == 0 {
		t.Errorf("cache on: %+v; want 16 misses and hits", on.CommCache)
	}
	if off.CommCache.Hits != 0 || off.CommCache.Misses <= on.CommCache.Misses*5 {
		t.Errorf("cache off: %+v; want no hits and many more misses", off.CommCache)
	}
	if *off.Steps.P50Ns < *on.Steps.P50Ns*3 {
		t.Errorf("cache off p50 step %s vs on %s: creating communicators should dominate", units.Dur(*off.Steps.P50Ns), units.Dur(*on.Steps.P50Ns))
	}
	if small.CommCache.Evictions == 0 {
		t.Errorf("cache of 12 for 16 communicators evicted nothing: %+v", small.CommCache)
	}
	// A plan's communicator spans all 16 devices: the first pairing's plan creates it, the second's
	// finds it; executing plans looks nothing up.
	if prep.CommCache.Misses != 1 || prep.CommCache.Hits != 1 {
		t.Errorf("prepared: %+v; want one miss and one hit, at planning only", prep.CommCache)
	}
}

// overlap: gradients' all-reduces overlap the backward compute; without early send the host waits
// for each gradient and the compute stream starves.
func TestOverlapEarlySend(t *testing.T) {
	early, _ := runReport(t, Config{Scenario: "overlap"})
	late, _ := runReport(t, Config{Scenario: "overlap", Sets: map[string]string{"early_send": "off"}})
	t.Logf("overlap %.1f%%; step p50 early %s, late %s; host wait early %s, late %s", *early.Overlap.CommComputePct,
		units.Dur(*early.Steps.P50Ns), units.Dur(*late.Steps.P50Ns), units.Dur(early.Idle.ByCause["host_wait"]), units.Dur(late.Idle.ByCause["host_wait"]))
	if *early.Overlap.CommComputePct < 50 {
		t.Errorf("comm/compute overlap %.1f%%; want most communication hidden", *early.Overlap.CommComputePct)
	}
	if *late.Steps.P50Ns <= *early.Steps.P50Ns {
		t.Errorf("early send does not help: p50 %d vs %d", *early.Steps.P50Ns, *late.Steps.P50Ns)
	}
	if early.Groups.Launches == 0 {
		t.Error("groups=on launched no groups")
	}
	nog, _ := runReport(t, Config{Scenario: "overlap", Sets: map[string]string{"groups": "off"}})
	if nog.Groups.Launches != 0 {
		t.Errorf("groups=off launched %d groups", nog.Groups.Launches)
	}
}

// allreduce-sweep: every size from 8 B to 1 GiB; the 1 GiB row reaches the published NVLS busbw
// (~480 GB/s on 8×H100: NCCL's tuner picks NVLS on an NVSwitch host), labelled NVLS_Simple.
func TestAllReduceSweep(t *testing.T) {
	r, _ := runReport(t, Config{Scenario: "allreduce-sweep", Steps: 1})
	if len(r.Collectives) != 28 {
		t.Fatalf("%d sizes; want 28 (8 B … 1 GiB)", len(r.Collectives))
	}
	last := r.Collectives[len(r.Collectives)-1]
	if last.Bytes != 1<<30 || *last.BusBW < 456 || *last.BusBW > 504 {
		t.Errorf("1 GiB row %+v; want busbw 480 ±5%%", last)
	}
	small := r.Collectives[0]
	if *small.P50Ns < 10_000 || *small.P50Ns > 40_000 {
		t.Errorf("8 B all-reduce takes %s; want latency-bound tens of µs", units.Dur(*small.P50Ns))
	}
}

// allreduce-sweep with nccl_algo and nccl_proto forced, as NCCL_ALGO/NCCL_PROTO force NCCL: every
// row carries the forced label, and forced ring reaches the published ring busbw (~370 GB/s ±5%).
func TestAllReduceSweepForced(t *testing.T) {
	tests := []struct {
		sets  map[string]string
		label string
		bus   float64 // 1 GiB busbw, 0: not checked
	}{
		{map[string]string{"nccl_algo": "ring"}, "", 370},
		{map[string]string{"nccl_algo": "ring", "nccl_proto": "simple"}, "Ring_Simple", 370},
		{map[string]string{"nccl_algo": "tree", "nccl_proto": "ll128"}, "Tree_LL128", 0},
	}
	for _, tc := range tests {
		r, _ := runReport(t, Config{Scenario: "allreduce-sweep", Steps: 1, Sets: tc.sets})
		for _, c := range r.Collectives {
			if tc.label != "" && c.AlgoProto != tc.label {
				t.Errorf("%v: %s row labelled %q; want %q", tc.sets, units.Bytes(c.Bytes), c.AlgoProto, tc.label)
			}
			if !strings.HasPrefix(c.AlgoProto, "Ring_") && tc.sets["nccl_algo"] == "ring" {
				t.Errorf("%v: %s row labelled %q; want ring", tc.sets, units.Bytes(c.Bytes), c.AlgoProto)
			}
		}
		last := r.Collectives[len(r.Collectives)-1]
		if tc.bus > 0 && (last.Bytes != 1<<30 || *last.BusBW < tc.bus*0.95 || *last.BusBW > tc.bus*1.05) {
			t.Errorf("%v: 1 GiB row %s busbw %.1f; want %.0f ±5%%", tc.sets, last.AlgoProto, *last.BusBW, tc.bus)
		}
	}
}

// moe-alltoall: ragged all-to-all with skewed per-rank sizes.
func TestMoERagged(t *testing.T) {
	st := timeline.NewStore(nil)
	p, err := Prepare(Config{Scenario: "moe-alltoall", Steps: 2}, st)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	sizes := map[int64]bool{}
	for _, e := range st.Events() {
		if e.Kind == 4 && e.Sub == 5 { // collective, ragged all-to-all
			sizes[e.Bytes] = true
		}
	}
	if len(sizes) < 4 {
		t.Errorf("ragged all-to-all ranks sent %d distinct sizes; want skewed, different per rank", len(sizes))
	}
}

// The same seed gives the same report; another seed changes the jittered numbers.
func TestDeterministic(t *testing.T) {
	js := func(seed int64) string {
		r, _ := runReport(t, Config{Scenario: "moe-alltoall", Seed: seed})
		data, _ := json.Marshal(r)
		return string(data)
	}
	a, b, c := js(7), js(7), js(8)
	if a != b {
		t.Error("two runs with seed 7 differ")
	}
	if a == c {
		t.Error("seeds 7 and 8 gave identical reports")
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{Scenario: "nope"}, `unknown scenario "nope"`},
		{Config{Topology: "h200x3"}, `unknown topology "h200x3"`},
		{Config{Sets: map[string]string{"stages": "3"}}, `unknown knob "stages"`},
		{Config{Backend: "cuda"}, `backend "cuda" is not available in this build: build with "go build -tags cuda ./cmd/xfertop"`},
		{Config{Backend: "tpu"}, `unknown backend "tpu"`},
		{Config{Scenario: "crosshost", Topology: "h100x8"}, "crosshost needs at least 2 hosts"},
	}
	for _, tc := range tests {
		_, err := Prepare(tc.cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Prepare(%+v) = %v; want a ConfigError containing %q", tc.cfg, err, tc.want)
		}
	}
}

// Every built-in runs to its end (or its alert) and produces a report.
func TestEveryBuiltinRuns(t *testing.T) {
	for _, name := range builtins {
		r, out := runReport(t, Config{Scenario: name, Steps: 2})
		if r.Events == 0 {
			t.Errorf("%s: no events", name)
		}
		if out.Ended != nil && name != "deadlock" {
			t.Errorf("%s ended early: %v", name, out.Ended)
		}
	}
}

// A cancelled context stops the run and reports it, with what ran so far kept.
func TestCancel(t *testing.T) {
	st := timeline.NewStore(nil)
	p, err := Prepare(Config{Scenario: "pipeline", Speed: 0.001}, st)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out, err := p.Run(ctx)
	if err != nil || !errors.Is(out.Ended, engine.ErrCanceled) {
		t.Errorf("cancelled run: out %+v err %v", out, err)
	}
	if st.Len() == 0 {
		t.Error("events before the cancel were lost")
	}
}

// --duration stops the run once that much simulated time has passed.
func TestDurationLimit(t *testing.T) {
	r, _ := runReport(t, Config{Scenario: "straggler", Steps: 0, Duration: 50 * time.Millisecond})
	// Each straggler step takes ~14 ms: the run stops at the first step boundary past 50 ms.
	if r.Steps.Count < 3 || r.Steps.Count > 5 {
		t.Errorf("%d steps in 50 ms of ~14 ms steps; want 4", r.Steps.Count)
	}
}

// Paced at speed X, a run cannot finish before simulated time / X of wall time has passed.
func TestPacing(t *testing.T) {
	st := timeline.NewStore(nil)
	p, err := Prepare(Config{Scenario: "straggler", Steps: 2, Speed: 1}, st)
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	if _, err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	wall, simulated := time.Since(begin), time.Duration(st.Events()[st.Len()-1].End)
	// Events less than a millisecond ahead are not waited for, so the run may end up to 1 ms early.
	if wall < simulated-time.Millisecond {
		t.Errorf("paced at speed 1, %v of simulated time took only %v", simulated, wall)
	}
}

// --nvml on a machine without NVML: the run goes on, and the report says once why there is no
// telemetry.
func TestNVMLUnavailable(t *testing.T) {
	t.Setenv("XFER_NVML_LIB", "/nonexistent/libnvidia-ml.so.1")
	r, out := runReport(t, Config{Scenario: "straggler", Steps: 3, NVML: true})
	if out.Ended != nil || r.Steps.Count != 3 {
		t.Fatalf("run with --nvml: %+v %v", r.Steps, out.Ended)
	}
	want := "NVML library not found (looked for /nonexistent/libnvidia-ml.so.1)"
	if !nvml.Supported {
		want = "needs a build with cgo enabled"
	}
	n := 0
	for _, a := range r.Alerts {
		if strings.Contains(a.Message, want) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("alerts %+v; want one saying NVML was not found", r.Alerts)
	}
}

// Progress says how far a run has got: after it, every event, the last time and every step.
func TestProgress(t *testing.T) {
	p, err := Prepare(Config{Scenario: "straggler", Steps: 3})
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r := p.Report(out)
	events, now, steps := p.Progress()
	if events != r.Events || steps != int64(out.Steps) || now <= 0 || now > r.DurationNs+1_000_000_000 {
		t.Errorf("progress %d events, t %d, %d steps; the run had %d events, %d steps, %d ns", events, now, steps, r.Events, out.Steps, r.DurationNs)
	}
}
