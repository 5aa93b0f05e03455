package nccltests

import (
	"fmt"
	"math"
	"strings"

	"github.com/xfertop/xfertop/timeline"
)

// Ops are the operations nccl-tests sweeps that xfertop simulates, in the order of its binaries.
var Ops = []timeline.CollOp{timeline.CollAllReduce, timeline.CollAllGather, timeline.CollReduceScatter,
	timeline.CollAllToAll, timeline.CollBroadcast, timeline.CollSendRecv}

// InferOp tells which nccl-tests binary wrote t, from what its rows say: the redop and root
// columns, whether count is the whole buffer or one rank's share (size / element / ranks), and the
// ratio of bus to algorithm bandwidth (nccl-tests' factor: 2(n−1)/n for all-reduce, (n−1)/n for
// all-gather, reduce-scatter and all-to-all, 1 for broadcast and send/recv). A log does not name
// its binary, and some cannot be told apart (all-gather from all-to-all; all-reduce from
// send/recv on 2 ranks): the error then lists the candidates.
func InferOp(t *Table) (timeline.CollOp, error) {
	n := t.Ranks
	if n < 2 {
		return 0, fmt.Errorf("the log does not say how many ranks ran (no \"# nThread … nGpus\" or \"#  Rank\" lines)")
	}
	best, ratio := bestRow(t)
	var cands []timeline.CollOp
	for _, op := range Ops {
		redop, root := opColumns(op)
		if best.Redop != redop || (root >= 0) != (best.Root >= 0) {
			continue
		}
		if elem := elemSize(best.Type); elem > 0 && best.Count > 0 {
			per := best.Size / elem
			if op == timeline.CollAllGather || op == timeline.CollReduceScatter || op == timeline.CollAllToAll {
				per /= int64(n)
			}
			if per != best.Count {
				continue
			}
		}
		if f := op.BusFactor(n); ratio > 0 && math.Abs(ratio-f) > 0.02*f+0.005 {
			continue
		}
		cands = append(cands, op)
	}
	switch len(cands) {
	case 1:
		return cands[0], nil
	case 0:
		return 0, fmt.Errorf("row of %d B (line %d: redop %s, root %d, busbw/algbw %.3f over %d ranks) fits no nccl-tests binary xfertop knows",
			best.Size, best.Line, best.Redop, best.Root, ratio, n)
	}
	names := make([]string, len(cands))
	for i, c := range cands {
		names[i] = c.String()
	}
	return 0, fmt.Errorf("the log could be %s (nccl-tests does not name its binary in the log)", strings.Join(names, " or "))
}

// bestRow returns the row whose bandwidth says most about the ratio busbw/algbw (the largest
// algbw: its two decimals are the most precise), and that ratio (0 when no row moved bytes).
func bestRow(t *Table) (Row, float64) {
	best := t.Rows[len(t.Rows)-1]
	for _, r := range t.Rows {
		if r.Out.AlgBW > best.Out.AlgBW {
			best = r
		}
	}
	if best.Out.AlgBW < 0.5 {
		return best, 0
	}
	return best, best.Out.BusBW / best.Out.AlgBW
}

// elemSize is the size of nccl-tests' data type name, 0 when unknown.
func elemSize(name string) int64 {
	switch name {
	case "int8", "uint8", "char", "f8e4m3", "f8e5m2":
		return 1
	case "half", "bfloat16", "float16":
		return 2
	case "int32", "uint32", "int", "float", "float32":
		return 4
	case "int64", "uint64", "double", "float64":
		return 8
	}
	return 0
}
