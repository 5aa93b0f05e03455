package nccltests_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/report/nccltests"
	"github.com/xfertop/xfertop/session"
	"github.com/xfertop/xfertop/timeline"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sweep runs the built-in sweep scenario of op (nccl-all-reduce, ...) up to maxBytes.
func sweep(t *testing.T, scenario, topology string, maxBytes string) *report.Report {
	t.Helper()
	p, err := session.Prepare(session.Config{Scenario: scenario, Topology: topology, Seed: 1,
		Sets: map[string]string{"max_bytes": maxBytes, "iters": "3"}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Run(context.Background())
	if err != nil || out.Ended != nil {
		t.Fatalf("run: %v, %v", err, out.Ended)
	}
	return p.Report(out)
}

var scenarios = map[timeline.CollOp]string{
	timeline.CollAllReduce: "nccl-all-reduce", timeline.CollAllGather: "nccl-all-gather",
	timeline.CollReduceScatter: "nccl-reduce-scatter", timeline.CollAllToAll: "nccl-alltoall",
	timeline.CollBroadcast: "nccl-broadcast", timeline.CollSendRecv: "nccl-sendrecv",
}

// TestSweepTableIsTheAnalysis: the nccl-tests table of each built-in sweep, printed and read back,
// holds the analysis layer's numbers and no others: per size the row's mean time (total time over
// count), its algbw and busbw (nccl-tests' formulas in analysis/collectives.go; for send/recv the
// grouped iterations of analysis/p2p.go), in both the out-of-place and in-place columns, and their
// average.
func TestSweepTableIsTheAnalysis(t *testing.T) {
	for _, op := range nccltests.Ops {
		for _, topo := range []string{"h100x8", "h100x8x2"} {
			t.Run(fmt.Sprintf("%s/%s", op, topo), func(t *testing.T) {
				rep := sweep(t, scenarios[op], topo, "4MiB")
				tab, err := nccltests.FromReport(rep, op, 3)
				if err != nil {
					t.Fatal(err)
				}
				var b bytes.Buffer
				if err := nccltests.Write(&b, tab); err != nil {
					t.Fatal(err)
				}
				back, err := nccltests.Parse(&b, "sweep.log")
				if err != nil {
					t.Fatalf("%v\n%s", err, b.String())
				}
				type want struct {
					timeUs, alg, bus float64
					ranks            int
				}
				rows := map[int64]want{}
				if op == timeline.CollSendRecv {
					for _, r := range rep.SendRecv {
						rows[r.Bytes] = want{float64(r.TimeNs) / float64(r.Count) / 1e3, *r.AlgBW, *r.AlgBW, r.Sends}
					}
				} else {
					for _, r := range rep.Collectives {
						if r.Op == op.String() {
							w := want{timeUs: float64(r.TimeNs) / float64(r.Count) / 1e3, ranks: r.Ranks}
							if r.AlgBW != nil {
								w.alg, w.bus = *r.AlgBW, *r.BusBW
							}
							rows[r.Bytes] = w
						}
					}
				}
				if len(back.Rows) != len(rows) || back.Ranks != rep.Devices {
					t.Fatalf("%d rows over %d ranks; the analysis has %d over %d\n%s", len(back.Rows), back.Ranks, len(rows), rep.Devices, b.String())
				}
				var sum float64
				for _, r := range back.Rows {
					w, ok := rows[r.Size]
					if !ok {
						t.Fatalf("row of %d B: not in the analysis", r.Size)
					}
					for _, m := range []nccltests.Measure{r.Out, r.In} {
						// nccl-tests' table has two decimals; the analysis keeps three significant
						// digits below 1 GB/s.
						if !closeTime(m.TimeUs, w.timeUs) || !closeRate(m.AlgBW, w.alg) || !closeRate(m.BusBW, w.bus) || m.Wrong != "N/A" {
							t.Errorf("%d B: %.2f µs %.2f/%.2f GB/s; analysis %.3f µs %.2f/%.2f", r.Size, m.TimeUs, m.AlgBW, m.BusBW, w.timeUs, w.alg, w.bus)
						}
					}
					sum += 2 * r.Out.BusBW
				}
				if avg := sum / float64(2*len(back.Rows)); math.Abs(back.AvgBusBW-avg) > 0.005+1e-5*max(avg, 1) {
					t.Errorf("avg bus bandwidth %v; rows average %v", back.AvgBusBW, avg)
				}
				if inferred, err := nccltests.InferOp(back); err == nil && inferred != op {
					t.Errorf("InferOp = %v; want %v", inferred, op)
				}
			})
		}
	}
}

// closeTime: a time as nccl-tests prints it (2 decimals below 100 µs, 1 below 10 ms, then none).
func closeTime(printed, exact float64) bool {
	tol := 0.005
	switch {
	case exact >= 10000:
		tol = 0.5
	case exact >= 100:
		tol = 0.05
	}
	return math.Abs(printed-exact) <= tol+1e-9
}

// TestSendRecvSweepTimeIsPerIteration: across hosts sendrecv_perf's time is per iteration, every
// pair done, so the pairs that cross the NICs set it; inside a host every pair is alike. On
// h100x8x2 the table's time at 64 MiB is the slowest send's time in the iteration (the 2 of 16
// pairs that cross hosts: 64 MiB at 47 GB/s ≈ 1.43 ms) and well above the mean send's.
func TestSendRecvSweepTimeIsPerIteration(t *testing.T) {
	rep := sweep(t, "nccl-sendrecv", "h100x8x2", "64MiB")
	tab, err := nccltests.FromReport(rep, timeline.CollSendRecv, 3)
	if err != nil {
		t.Fatal(err)
	}
	last := tab.Rows[len(tab.Rows)-1]
	var mean float64
	for _, r := range rep.Transfers.BySize {
		if r.Kind == "send" && r.Bytes/r.Count == last.Size {
			mean = float64(r.BusyNs) / float64(r.Count) / 1e3
		}
	}
	nic := float64(last.Size) / 47e9 * 1e6 // µs through one NIC at NCCL's 47 GB/s
	if last.Size != 64<<20 || last.Out.TimeUs < nic || last.Out.TimeUs > 1.05*nic || last.Out.TimeUs < 1.5*mean {
		t.Errorf("64 MiB send/recv over 2×8: %d B %.1f µs per iteration (mean send %.1f µs); want the NIC-crossing pair's ≈ %.1f µs",
			last.Size, last.Out.TimeUs, mean, nic)
	}
}

// TestSweepSizes: the sweeps run nccl-tests' sizes, rounded for float data as nccl-tests does (all-
// gather, reduce-scatter and all-to-all keep a per-rank count of whole 16-byte units, so 8–64 B
// over 8 ranks are 0 B), and the counts it prints.
func TestSweepSizes(t *testing.T) {
	rep := sweep(t, "nccl-all-gather", "h100x8", "1KiB")
	tab, err := nccltests.FromReport(rep, timeline.CollAllGather, 3)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range tab.Rows {
		got = append(got, fmt.Sprintf("%d/%d", r.Size, r.Count))
	}
	if want := "0/0 128/4 256/8 512/16 1024/32"; strings.Join(got, " ") != want {
		t.Errorf("all_gather sizes/counts %s; want %s", strings.Join(got, " "), want)
	}
}

// TestSweepDeterministic: the same seed gives the same table, byte for byte, on one host and two.
func TestSweepDeterministic(t *testing.T) {
	for _, tc := range []struct{ scenario, topo string }{{"nccl-all-reduce", "h100x8"}, {"nccl-sendrecv", "h100x8x2"}, {"nccl-alltoall", "h100x8x2"}} {
		var tables [2]string
		for i := range tables {
			rep := sweep(t, tc.scenario, tc.topo, "16MiB")
			op := timeline.CollAllReduce
			for o, s := range scenarios {
				if s == tc.scenario {
					op = o
				}
			}
			tab, err := nccltests.FromReport(rep, op, 3)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := nccltests.Write(&b, tab); err != nil {
				t.Fatal(err)
			}
			tables[i] = b.String()
		}
		if tables[0] != tables[1] {
			t.Errorf("%s on %s: two runs with seed 1 differ:\n%s\n%s", tc.scenario, tc.topo, tables[0], tables[1])
		}
	}
}

// closeRate says whether a rate printed with two decimals, as nccl-tests prints it, is the
// analysis's (kept to three significant digits below 1 GB/s) to within its last digit.
func closeRate(printed, analysed float64) bool { return math.Abs(printed-analysed) <= 0.005+1e-9 }
