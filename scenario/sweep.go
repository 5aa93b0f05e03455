package scenario

import (
	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/fileerr"
	"github.com/xfertop/xfertop/timeline"
)

// ---- sweep: nccl-tests style, every size each step ----

// sweepPhase runs one operation at every size from min_bytes to max_bytes (× factor), iters times
// per size, as nccl-tests' *_perf binaries do. op send_recv is sendrecv_perf's pattern: in one
// group per rank, rank i sends to rank i+1 and receives from rank i−1 (a ring of point-to-point
// transfers, not a collective). align: nccl-tests rounds each size the way nccl-tests does for
// float data, so that the sizes of a simulated sweep are those of a real log line for line, and
// drains every rank and meets at a barrier between sizes, as nccl-tests does before it times one.
type sweepPhase struct {
	op    timeline.CollOp
	ranks []engine.DeviceID
	sizes []int64
	iters int
	sync  bool // drain and meet between sizes, as nccl-tests does (align: nccl-tests)
}

func buildSweep(p *params, topo engine.Topology) (phase, error) {
	op, _ := timeline.ParseCollOp(p.str("op", "all_reduce", "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce", "send_recv"))
	ph := &sweepPhase{op: op, ranks: p.ranks("ranks", topo), iters: int(p.integer("iters", 1, 1, 10_000))}
	lo, hi := p.size("min_bytes", 8), p.size("max_bytes", 1<<30)
	factor := p.integer("factor", 2, 2, 1024)
	align := p.str("align", "none", "none", "nccl-tests")
	if err := p.done(); err != nil {
		return nil, err
	}
	if lo < 1 || hi < lo {
		return nil, fileerr.At(p.src, p.line, "sweep: need 1 <= min_bytes <= max_bytes, got %d and %d", lo, hi)
	}
	if op == timeline.CollSendRecv && len(ph.ranks) < 2 {
		return nil, fileerr.At(p.src, p.line, "sweep: send_recv needs at least 2 ranks, got %d", len(ph.ranks))
	}
	ph.sync = align == "nccl-tests"
	for s := lo; s <= hi; s *= factor {
		if align == "nccl-tests" {
			ph.sizes = append(ph.sizes, NCCLTestsSize(op, s, len(ph.ranks)))
		} else {
			ph.sizes = append(ph.sizes, s)
		}
		if s > hi/factor {
			break // the next size would overflow
		}
	}
	return ph, nil
}

// NCCLTestsFloat is the element size of nccl-tests' default data type (float).
const NCCLTestsFloat = 4

// NCCLTestsSize is the size nccl-tests runs when asked for size bytes of float data over n ranks:
// whole elements, and for all-gather, reduce-scatter and all-to-all a per-rank count rounded down
// to 16 bytes (nccl-tests' *GetCollByteCount), so that 8 B over 8 ranks is 0 B.
func NCCLTestsSize(op timeline.CollOp, size int64, n int) int64 {
	switch op {
	case timeline.CollAllGather, timeline.CollReduceScatter, timeline.CollAllToAll:
		per := size / NCCLTestsFloat / int64(max(n, 1))
		per &^= 16/NCCLTestsFloat - 1
		return per * NCCLTestsFloat * int64(max(n, 1))
	}
	return size / NCCLTestsFloat * NCCLTestsFloat
}

func (ph *sweepPhase) issue(r *runner, _ int) error {
	for _, size := range ph.sizes {
		for range ph.iters {
			if ph.op == timeline.CollSendRecv {
				if err := ph.sendRecv(r, size); err != nil {
					return err
				}
				continue
			}
			if _, err := r.c.CollectiveAll(ph.op, ph.ranks, size, FormatSize(size)); err != nil {
				return err
			}
		}
		if ph.sync {
			if err := ph.meet(r, size); err != nil {
				return err
			}
		}
	}
	return nil
}

// meet ends a size as nccl-tests does before it times the next: every rank's stream drains and the
// ranks meet at a barrier, so that the next size starts on every rank at once. Without it the ranks
// a size left idle start the next one early, and a sweep's per-iteration times (send/recv's, set by
// its slowest pair) would include the previous size's tail.
func (ph *sweepPhase) meet(r *runner, size int64) error {
	for _, d := range ph.ranks {
		ev, err := r.c.Record(r.c.TransferStream(d))
		if err != nil {
			return err
		}
		if err := r.c.WaitEvent(r.c.ComputeStream(d), ev); err != nil {
			return err
		}
	}
	if _, err := r.c.Barrier(ph.ranks, "sweep "+FormatSize(size)+" done"); err != nil {
		return err
	}
	for _, d := range ph.ranks {
		ev, err := r.c.Record(r.c.ComputeStream(d))
		if err != nil {
			return err
		}
		if err := r.c.WaitEvent(r.c.TransferStream(d), ev); err != nil {
			return err
		}
	}
	return nil
}

// sendRecv issues one iteration of sendrecv_perf: every rank, in one group, sends size bytes to the
// next rank and receives size bytes from the previous one.
func (ph *sweepPhase) sendRecv(r *runner, size int64) error {
	n := len(ph.ranks)
	ids := make([]uint64, n) // ids[i] links rank i's send with rank i+1's receive
	for i := range ids {
		ids[i] = r.c.NewOpID()
	}
	r.c.GroupStart()
	defer r.c.GroupEnd()
	for i, d := range ph.ranks {
		next, prev := ph.ranks[(i+1)%n], ph.ranks[(i+n-1)%n]
		s := r.c.TransferStream(d)
		if _, err := r.c.Send(s, next, size, ids[i]); err != nil {
			return err
		}
		if _, err := r.c.Recv(s, prev, size, ids[(i+n-1)%n]); err != nil {
			return err
		}
	}
	return nil
}
