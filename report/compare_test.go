package report

import (
	"slices"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis"
)

func withRun(steps int64, durNs, idleNs, hostWaitNs int64, colls ...analysis.Collective) *Report {
	p50 := int64(100)
	r := &Report{DurationNs: durNs, Steps: analysis.Steps{Count: steps, P50Ns: &p50, MeanNs: &p50, P99Ns: &p50},
		Idle: Idle{TotalNs: idleNs, ByCause: map[string]int64{"host_wait": hostWaitNs}}, Collectives: colls}
	if steps > 0 {
		r.Idle.InSteps = &analysis.IdleInSteps{DeviceNs: idleNs, StreamNs: hostWaitNs, ByCause: map[string]int64{"host_wait": hostWaitNs}}
	}
	return r
}

// withSetup is withRun whose idle totals hold a setup of setupNs on each of devs devices, outside
// the steps.
func withSetup(steps int64, idleNs, hostWaitNs, setupNs int64, devs int64) *Report {
	r := withRun(steps, 2e9, idleNs+devs*setupNs, hostWaitNs+devs*setupNs)
	r.Idle.InSteps = &analysis.IdleInSteps{DeviceNs: idleNs, StreamNs: hostWaitNs, ByCause: map[string]int64{"host_wait": hostWaitNs}}
	return r
}

func busRow(op string, ranks int, class int64, ap string, bus float64) analysis.Collective {
	return analysis.Collective{Op: op, Ranks: ranks, SizeClass: class, Bytes: class, Count: 1, AlgoProto: ap, BusBW: &bus}
}

func findRow(c *Comparison, name string) *Row {
	for i := range c.Rows {
		if c.Rows[i].Name == name {
			return &c.Rows[i]
		}
	}
	return nil
}

// Idle totals grow with a run's length: they are compared per step (per second of run when a run
// has no steps), and runs of different lengths get a warning and no verdict on them.
func TestCompareLength(t *testing.T) {
	tests := []struct {
		name         string
		a, b         *Report
		row          string
		wantA, wantB float64
		verdict      string // "" for none
		warn         bool
	}{
		{"same length: per step, with a verdict", withRun(4, 2e9, 800, 400), withRun(4, 2e9, 400, 200),
			"device idle per step (Σ devices)", 200, 100, "better", false},
		// 6 steps against 4: the totals (1200 and 800) alone would make B better; per step they are even.
		{"different lengths: per step, a warning, no verdict", withRun(6, 3e9, 1200, 600), withRun(4, 2e9, 800, 400),
			"device idle per step (Σ devices)", 200, 200, "", true},
		{"different lengths: causes per step too", withRun(6, 3e9, 1200, 600), withRun(4, 2e9, 1200, 400),
			"stream gaps per step: host_wait", 100, 100, "", true},
		// 8 devices idle through a 920 ms setup: per step only the idle inside the steps counts.
		{"per step: the setup is not a step's", withSetup(8, 800, 400, 920e6, 8), withSetup(8, 1600, 400, 920e6, 8),
			"device idle per step (Σ devices)", 100, 200, "worse", false},
		{"per step: the setup is not a step's, causes too", withSetup(8, 800, 400, 920e6, 8), withSetup(8, 1600, 800, 920e6, 8),
			"stream gaps per step: host_wait", 50, 100, "worse", false},
		{"no steps: per second of run", withRun(0, 2e9, 800, 0), withRun(0, 1e9, 400, 0),
			"device idle per second of run (Σ devices)", 400, 400, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Compare(tc.a, tc.b, "A", "B")
			r := findRow(c, tc.row)
			if r == nil {
				t.Fatalf("no row %q in %+v", tc.row, c.Rows)
			}
			if r.A == nil || r.B == nil || *r.A != tc.wantA || *r.B != tc.wantB {
				t.Errorf("%s: A %v, B %v; want %v, %v", tc.row, r.A, r.B, tc.wantA, tc.wantB)
			}
			if _, _, _, _, v := r.Cells(); v != tc.verdict {
				t.Errorf("verdict %q; want %q", v, tc.verdict)
			}
			if (len(c.Warnings) > 0) != tc.warn {
				t.Errorf("warnings %q; want some: %v", c.Warnings, tc.warn)
			}
			var txt strings.Builder
			if err := CompareText(&txt, c); err != nil || strings.Contains(txt.String(), "WARNING: the runs differ in length") != tc.warn {
				t.Errorf("text (%v):\n%s", err, txt.String())
			}
		})
	}
}

// Every collective either run ran has a busbw row; the run that did not run it is unknown there.
// Rows pair on op, ranks, size and algorithm/protocol, then on op, ranks and size where each run
// chose one algorithm.
func TestCompareCollectives(t *testing.T) {
	mib := int64(1 << 20)
	tests := []struct {
		name string
		a, b []analysis.Collective
		want []string // "name A B", "—" for unknown
	}{
		{"only A ran them (tp-overlap off against ring)",
			[]analysis.Collective{busRow("all_gather", 8, 128*mib, "Ring_Simple", 335.84), busRow("reduce_scatter", 8, 128*mib, "Ring_Simple", 335.84)}, nil,
			[]string{"all_gather ×8 ≤128 MiB Ring_Simple busbw 335.84 GB/s —", "reduce_scatter ×8 ≤128 MiB Ring_Simple busbw 335.84 GB/s —"}},
		{"only B ran it", nil, []analysis.Collective{busRow("all_reduce", 8, mib, "", 100)},
			[]string{"all_reduce ×8 ≤1 MiB busbw — 100.00 GB/s"}},
		{"same algorithm", []analysis.Collective{busRow("all_reduce", 8, mib, "Ring_LL128", 100)}, []analysis.Collective{busRow("all_reduce", 8, mib, "Ring_LL128", 150)},
			[]string{"all_reduce ×8 ≤1 MiB Ring_LL128 busbw 100.00 GB/s 150.00 GB/s"}},
		{"each run chose another algorithm", []analysis.Collective{busRow("all_reduce", 8, mib, "Ring_LL128", 100)},
			[]analysis.Collective{busRow("all_reduce", 8, mib, "Tree_LL128", 80)},
			[]string{"all_reduce ×8 ≤1 MiB Ring_LL128 → Tree_LL128 busbw 100.00 GB/s 80.00 GB/s"}},
		{"ranks unknown in a trace", []analysis.Collective{busRow("all_reduce", 0, mib, "", 10)}, nil,
			[]string{"all_reduce (ranks unknown) ≤1 MiB busbw 10.00 GB/s —"}},
		{"size unknown in a trace: its row, busbw unknown", nil,
			[]analysis.Collective{{Op: "all_reduce", Count: 3}},
			[]string{"all_reduce (ranks and size unknown) busbw — —"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Compare(withRun(1, 1e9, 0, 0, tc.a...), withRun(1, 1e9, 0, 0, tc.b...), "A", "B")
			var got []string
			for _, r := range c.Rows {
				if r.Section == "collectives" {
					a, b, _, _, _ := r.Cells()
					got = append(got, r.Name+" "+a+" "+b)
				}
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("collective rows:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// Runs of different lengths get no verdict on their step times either; a trace's stream gaps are
// split as Holistic Trace Analysis does, so its event, barrier and peer waits are unknown, not 0.
func TestCompareVerdictsAndUnknownCauses(t *testing.T) {
	a, b := withRun(2, 1e9, 100, 50), withRun(5, 2e9, 100, 50)
	a.Idle.ByCause["event_wait"] = 40
	a.Idle.InSteps.ByCause["event_wait"] = 40
	c := Compare(a, b, "A", "B")
	for _, name := range []string{"step time p50", "step time mean", "step time p99"} {
		if r := findRow(c, name); r == nil || r.Better != nil {
			t.Errorf("%s: %+v; want a row without a verdict", name, r)
		}
	}
	b.IdleMode = "hta"
	c = Compare(a, b, "A", "B")
	r := findRow(c, "stream gaps per step: event_wait")
	if r == nil || r.A == nil || r.B != nil {
		t.Fatalf("event_wait against a trace: %+v; want A's figure and B unknown", r)
	}
	if h := findRow(c, "stream gaps per step: host_wait"); h == nil || h.B == nil {
		t.Errorf("host_wait against a trace: %+v; want both figures (HTA tells host waits)", h)
	}
}

// sized is withRun(4 steps) on devs devices of gpus per host, running scenario.
func sized(devs, gpus int, scenario string, idleNs int64) *Report {
	r := withRun(4, 2e9, idleNs, idleNs/2)
	r.Devices, r.GPUsPerHost, r.Scenario = devs, gpus, scenario
	return r
}

// Runs of different sizes or workloads are warned about (the warnings are the text's, the JSON's
// and the console's), their idle compared per device when the device counts differ, and a
// different workload gets no verdict at all: 16 GPUs of pipeline against 128 of llm-train had
// their idle summed over devices called 6388% worse, with no warning.
func TestCompareShape(t *testing.T) {
	tests := []struct {
		name         string
		a, b         *Report
		warns        []string // each a part of one warning, in order
		row          string
		wantA, wantB float64
		verdicts     bool // some row has one
	}{
		{"same size and workload", sized(16, 8, "pipeline", 1600), sized(16, 8, "pipeline", 800), nil,
			"device idle per step (Σ devices)", 400, 200, true},
		// 16 devices with 1600 ns idle over 4 steps: 25 per device per step; 128 with 6400: 12.5.
		{"more devices: per device", sized(16, 8, "pipeline", 1600), sized(128, 8, "pipeline", 6400),
			[]string{"A has 16 devices, B 128", "A ran on 2 hosts, B on 16"}, "device idle per step (per device)", 25, 12.5, true},
		{"same devices, other hosts", sized(16, 8, "pipeline", 1600), sized(16, 4, "pipeline", 1600),
			[]string{"A ran on 2 hosts, B on 4"}, "device idle per step (Σ devices)", 400, 400, false},
		{"other workload", sized(16, 8, "pipeline", 1600), sized(16, 8, "llm-train", 800),
			[]string{`A "pipeline", B "llm-train"`}, "device idle per step (Σ devices)", 400, 200, false},
		{"traces: sizes unknown, no warning", sized(0, 0, "", 1600), sized(0, 0, "", 800), nil,
			"device idle per step (Σ devices)", 400, 200, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Compare(tc.a, tc.b, "A", "B")
			if len(c.Warnings) != len(tc.warns) {
				t.Fatalf("warnings %q; want %d", c.Warnings, len(tc.warns))
			}
			for i, w := range tc.warns {
				if !strings.Contains(c.Warnings[i], w) {
					t.Errorf("warning %d = %q; want it to hold %q", i, c.Warnings[i], w)
				}
			}
			r := findRow(c, tc.row)
			if r == nil || *r.A != tc.wantA || *r.B != tc.wantB {
				t.Fatalf("row %q = %+v; want A %v, B %v", tc.row, r, tc.wantA, tc.wantB)
			}
			verdicts := false
			for _, r := range c.Rows {
				verdicts = verdicts || r.Better != nil
			}
			if verdicts != tc.verdicts {
				t.Errorf("some row has a verdict: %v; want %v", verdicts, tc.verdicts)
			}
		})
	}
}

// Stream gaps inside the steps estimated from time bins (StreamErrorNs > 0) get no verdict when
// the two runs' figures differ by no more than the two estimates may be off; a difference past
// that, or between exact figures, gets one.
func TestCompareEstimatedStreamGaps(t *testing.T) {
	for _, c := range []struct {
		name              string
		hostB, errA, errB int64
		verdict           bool
	}{
		{name: "exact", hostB: 990_000, verdict: true},
		{name: "within the error", hostB: 990_000, errA: 6_000, errB: 6_000},
		{name: "past the error", hostB: 900_000, errA: 6_000, errB: 6_000, verdict: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := withRun(2, 1e9, 100, 1_000_000), withRun(2, 1e9, 100, c.hostB)
			a.Idle.InSteps.StreamErrorNs, b.Idle.InSteps.StreamErrorNs = c.errA, c.errB
			r := findRow(Compare(a, b, "A", "B"), "stream gaps per step: host_wait")
			if r == nil || (r.Better != nil) != c.verdict {
				t.Fatalf("%+v; want a verdict: %v", r, c.verdict)
			}
		})
	}
}

// Runs with different faults injected say so: why B differs from A.
func TestCompareFaultsDiffer(t *testing.T) {
	a, b := withRun(2, 1e9, 100, 50), withRun(2, 1e9, 100, 50)
	if c := Compare(a, b, "A", "B"); len(c.Warnings) != 0 {
		t.Errorf("healthy runs: warnings %q; want none", c.Warnings)
	}
	b.Faults = []string{"kind=nic_slow,host=37,nic=3,factor=0.3,at=1.1s"}
	want := "the runs had different faults injected: A none; B kind=nic_slow,host=37,nic=3,factor=0.3,at=1.1s"
	if c := Compare(a, b, "A", "B"); !slices.Contains(c.Warnings, want) {
		t.Errorf("warnings %q; want %q", c.Warnings, want)
	}
}
