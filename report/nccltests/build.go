package nccltests

import (
	"fmt"

	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/timeline"
)

// ErrNoSweep is the error for a report without rows of the operation asked for.
var ErrNoSweep = fmt.Errorf("the report has no rows of that operation")

// FromReport lays out a report's rows of op as an nccl-tests table: collective rows for a
// collective, the grouped send/recv iterations for send/recv (sendrecv_perf's time is per
// iteration, every pair done: the slowest pair sets it). Every number is the analysis layer's:
// time is the row's total time over its count, algbw and busbw are the row's own (nccl-tests'
// formulas, analysis/collectives.go and analysis/p2p.go). The
// simulator does not tell in-place from out-of-place, so the in-place columns repeat the
// out-of-place ones; nothing is validated, so #wrong is N/A. The average bus bandwidth is over
// the rows printed, both columns, as nccl-tests averages.
func FromReport(r *report.Report, op timeline.CollOp, iters int) (*Table, error) {
	t := &Table{Op: op, NThread: 1, NGpus: r.Devices, Iters: iters, Factor: 2}
	if op == timeline.CollSendRecv {
		for _, row := range r.SendRecv {
			if row.Count == 0 {
				continue
			}
			if t.Ranks != 0 && row.Sends != t.Ranks {
				return nil, fmt.Errorf("the report has send/recv iterations over %d and %d ranks: give one sweep", t.Ranks, row.Sends)
			}
			t.Ranks = row.Sends
			t.add(op, row.Sends, row.Bytes, row.TimeNs, row.Count, row.AlgBW, row.AlgBW, "")
		}
	} else {
		for _, row := range r.Collectives {
			if row.Op != op.String() || row.Count == 0 {
				continue
			}
			if t.Ranks != 0 && row.Ranks != t.Ranks {
				return nil, fmt.Errorf("the report has %s rows over %d and %d ranks: give one sweep", op, t.Ranks, row.Ranks)
			}
			t.Ranks = row.Ranks
			t.add(op, row.Ranks, row.Bytes, row.TimeNs, row.Count, row.AlgBW, row.BusBW, row.AlgoProto)
		}
	}
	if len(t.Rows) == 0 {
		return nil, fmt.Errorf("%s: %w", op, ErrNoSweep)
	}
	t.NGpus = t.Ranks
	t.MinBytes, t.MaxBytes = t.Rows[0].Size, t.Rows[len(t.Rows)-1].Size
	per := max(r.GPUsPerHost, 1)
	for i := range t.Ranks {
		t.Devices = append(t.Devices, fmt.Sprintf("host%d device %2d [sim] simulated GPU of %s", i/per, i%per, r.Topology))
	}
	t.average()
	return t, nil
}

// average sets the average bus bandwidth: over the rows printed, both columns, as nccl-tests
// averages.
func (t *Table) average() {
	var sum float64
	for _, row := range t.Rows {
		sum += row.Out.BusBW + row.In.BusBW
	}
	t.AvgBusBW, t.HasAvg = sum/float64(2*max(len(t.Rows), 1)), len(t.Rows) > 0
}

// Expand lays the rows out one per size step, as nccl-tests prints them: sizes are the sweep's
// steps as run (rounded as nccl-tests rounds them), in order, and a step whose size rounds to an
// earlier one's (8 to 64 B of an all-gather over 8 ranks are all 0 B) repeats that size's row,
// which the analysis holds once. The average bus bandwidth is then over the rows printed. Rows
// whose size is no step's (a scenario that ran other sizes) leave the table as it is.
func (t *Table) Expand(sizes []int64) {
	bySize := make(map[int64]Row, len(t.Rows))
	for _, r := range t.Rows {
		bySize[r.Size] = r
	}
	rows, used := make([]Row, 0, len(sizes)), map[int64]bool{}
	for _, s := range sizes {
		if r, ok := bySize[s]; ok {
			rows, used[s] = append(rows, r), true
		}
	}
	if len(used) != len(bySize) {
		return // rows of sizes that are not the steps' (a scenario of other sizes): leave them be
	}
	t.Rows = rows
	t.average()
}

// add appends the row of size bytes: count instances that took timeNs in all.
func (t *Table) add(op timeline.CollOp, ranks int, size, timeNs, count int64, algbw, busbw *float64, algoProto string) {
	redop, root := opColumns(op)
	m := Measure{TimeUs: float64(timeNs) / float64(count) / 1e3, AlgBW: deref(algbw), BusBW: deref(busbw), Wrong: "N/A"}
	if op == timeline.CollSendRecv {
		m.BusBW = m.AlgBW // nccl-tests' factor for send/recv is 1
	}
	t.Rows = append(t.Rows, Row{Size: size, Count: countOf(op, size, ranks), Type: "float", Redop: redop, Root: root,
		Out: m, In: m, HasIn: true, AlgoProto: algoProto})
}

// countOf is the element count nccl-tests prints for op over n ranks at size bytes of float data:
// the whole buffer for all-reduce, broadcast and send/recv; one rank's share for all-gather,
// reduce-scatter and all-to-all.
func countOf(op timeline.CollOp, size int64, n int) int64 {
	switch op {
	case timeline.CollAllGather, timeline.CollReduceScatter, timeline.CollAllToAll:
		return size / 4 / int64(max(n, 1))
	}
	return size / 4
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}
