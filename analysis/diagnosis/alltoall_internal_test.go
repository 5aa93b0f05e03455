package diagnosis

import (
	"math"
	"strings"
	"testing"
	"unsafe"

	"github.com/xfertop/xfertop/analysis/hostmap"
	"github.com/xfertop/xfertop/timeline"
)

// moeKernels adds one step of a mixture of experts' kernels on ranks GPUs: an attention kernel of
// 2 ms (±2%) and an expert kernel whose time follows its tokens (Zipf, the hot expert rotating with
// the step: rank (r+step) mod ranks + 1 in popularity, the hottest ranks× the coldest's and more),
// each scaled by slow(r) (1: healthy); the host launches both at the step's start, 10 µs apart.
func (s *stepper) moeKernels(ranks int, slow func(r int) float64) {
	var sum float64
	for j := range ranks {
		sum += math.Pow(float64(j+1), -1.2)
	}
	for r := range ranks {
		at := s.t
		pop := math.Pow(float64((r+int(s.step))%ranks+1), -1.2) / sum
		for i, d := range []float64{2 * float64(ms) * jitter(r, int(s.step)), 3 * float64(ms) * pop * float64(ranks)} {
			dur := int64(d * slow(r))
			s.add(timeline.Event{Kind: timeline.KindKernel, Start: at, End: at + dur, Queued: s.t + int64(i)*10_000, Device: int32(r), Peer: -1, Label: uint32(i + 1), Stream: 1})
			at += dur
		}
	}
}

// A throttled GPU among a mixture of experts' ranks: the hot expert's kernel time is many times its
// peers' by design, so by all its kernels it ranks first every step, confined to its one expert
// kernel (its attention at its peers' speed), and rotates before a second step; a GPU at 0.6 ranked
// below it and was never named. The kernels the ranks run alike (attention) name it; a healthy run
// of rotating hot experts names no one.
func TestSlowGPUAmongUnevenExperts(t *testing.T) {
	for _, c := range []struct {
		name  string
		slow  float64 // rank 5's kernels take this × as long (1: healthy)
		after int     // the step (0-based) the finding comes in; -1: none in 4
	}{
		{"healthy, hot experts rotating", 1, -1},
		{"GPU 5 at 0.6: its kernels 1.67×", 1 / 0.6, 0},
		{"GPU 5 at 0.8: 1.25×, two steps", 1 / 0.8, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStepper(8)
			for st := range 4 {
				s.moeKernels(32, func(r int) float64 {
					if r == 5 {
						return c.slow
					}
					return 1
				})
				s.endStep(100 * ms)
				got := s.d.Result(s.strs)
				if c.after < 0 || st < c.after {
					if len(got) > 0 {
						t.Fatalf("step %d: finding %s; want none", st, got[0].String())
					}
					continue
				}
				if len(got) != 1 || got[0].Kind != SlowGPU || got[0].Rank != 5 || !strings.Contains(got[0].Evidence, "among the kernels its peers ran alike") {
					for _, f := range got {
						t.Logf("%s", f.String())
					}
					t.Fatalf("step %d: %d findings; want one slow GPU of rank 5 by the kernels its peers ran alike", st, len(got))
				}
			}
		})
	}
}

// a2aStep adds one step of a collective of op on ranks ranks (every part from 0 to 90 ms of the
// step, as an all-to-all's parts end with its instance; a ragged one's bytes differ per rank) and
// each rank's NIC out and in over the step's two 50 ms windows, busy at the line rate but for
// rank slow's, at rate × it.
func (s *stepper) a2aStep(ranks int, op timeline.CollOp, slow int32, rate float64) {
	for r := range int32(ranks) {
		b := int64(100 << 20)
		if op == timeline.CollRaggedAllToAll {
			b += int64(r) << 16
		}
		s.add(timeline.Event{Kind: timeline.KindCollective, Sub: uint8(op), Start: s.t, End: s.t + 90*ms, Queued: s.t, Device: r, Peer: -1, Bytes: b, Ranks: uint16(ranks), Comm: 1, Op: uint64(s.step + 1), Stream: 2})
	}
	for w := range int64(2) {
		for r := range int32(ranks) {
			busy := 10 * ms // 470 MB at 47 GB/s
			if r == slow {
				busy = int64(float64(busy) / rate)
			}
			for _, dir := range []int{timeline.LinkTx, timeline.LinkRx} {
				s.add(timeline.Event{Kind: timeline.KindLinkBytes, Sub: timeline.PackLink(timeline.PeakNIC, dir), Start: s.t + w*timeline.LinkWindowNs,
					End: s.t + (w+1)*timeline.LinkWindowNs, Bytes: 470_000_000, Op: uint64(busy), Device: r, Peer: -1})
			}
		}
	}
	s.endStep(100 * ms)
}

// A NIC that moves at a fraction of its peers' rate while busy in an all-to-all: every rank's part
// ends with the instance and a ragged one's ranks each move their own bytes, so no rank's
// transfers are slower than a peer's and slowLink names none. Its rate while busy names it, among
// the all-to-all's ranks; in a collective whose times can name a rank (an all-reduce, here slowed
// on no rank), a link's rate alone is not made a finding.
func TestAllToAllLinkByBusyRate(t *testing.T) {
	for _, c := range []struct {
		name string
		op   timeline.CollOp
		rate float64
		want bool
	}{
		{"ragged all-to-all, NIC of rank 10 at 0.1", timeline.CollRaggedAllToAll, 0.1, true},
		{"all-to-all, NIC of rank 10 at 0.5", timeline.CollAllToAll, 0.5, true},
		{"ragged all-to-all, healthy", timeline.CollRaggedAllToAll, 1, false},
		{"all-reduce, NIC of rank 10 at 0.1", timeline.CollAllReduce, 0.1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStepper(8)
			for range 3 {
				s.a2aStep(32, c.op, 10, c.rate)
			}
			got := s.d.Result(s.strs)
			if !c.want {
				if len(got) > 0 {
					t.Fatalf("finding %s; want none", got[0].String())
				}
				return
			}
			if len(got) != 1 || got[0].Kind != SlowLink || got[0].Rank != 10 || got[0].Link != timeline.PeakNIC ||
				!strings.Contains(got[0].Evidence, "in its all-to-all (32 ranks), whose ranks' parts end together") {
				for _, f := range got {
					t.Logf("%s", f.String())
				}
				t.Fatalf("%d findings; want one slow link: rank 10's NIC, in its all-to-all", len(got))
			}
		})
	}
}

// TestRankAccLayout: a rank's state is a whole number of cache lines, and what launch reads and
// writes for every op lies in its first, the line Prefetch asks for. At 400 bytes, three ranks in
// four had active in the line after the one asked for.
func TestRankAccLayout(t *testing.T) {
	var r rankAcc
	if n := unsafe.Sizeof(r); n%64 != 0 {
		t.Errorf("a rank's state is %d bytes; want a multiple of 64", n)
	}
	if end := unsafe.Offsetof(r.active) + unsafe.Sizeof(r.active); end > 64 {
		t.Errorf("launch's fields end at %d; want them in the first 64 bytes", end)
	}
	d := New(hostmap.ByID(8))
	d.rank(1023)
	if p := uintptr(unsafe.Pointer(&d.ranks[0])); p%64 != 0 {
		t.Errorf("the ranks' states start at %#x; want a cache line's start", p)
	}
}
