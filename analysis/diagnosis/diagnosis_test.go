package diagnosis

import (
	"github.com/xfertop/xfertop/analysis/hostmap"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// stepper builds hand-made event sequences: per step, what each rank did.
type stepper struct {
	d    *Diagnosis
	t    int64 // the current step's start
	step uint32
	strs *timeline.Strings
}

const ms = int64(1_000_000)

func newStepper(gph int) *stepper {
	return &stepper{d: New(hostmap.ByID(gph)), strs: timeline.NewStrings()}
}

func (s *stepper) add(e timeline.Event) { s.d.Add(&e) }

// endStep closes a step of length dur.
func (s *stepper) endStep(dur int64) {
	s.add(timeline.Event{Kind: timeline.KindStep, Start: s.t, End: s.t + dur, Device: -1, Peer: -1, Aux: s.step})
	s.t += dur
	s.step++
}

// kernels: each rank runs n kernels of label 1, rank r taking dur(r) each; launched every 10 µs
// (rank's launch gap given by gap(r)).
func (s *stepper) kernels(ranks, n int, dur func(r, i int) int64, gap func(r int) int64) {
	for r := range ranks {
		at := s.t
		for i := range n {
			q := s.t + int64(i)*gap(r)
			d := dur(r, i)
			at = max(at, q)
			s.add(timeline.Event{Kind: timeline.KindKernel, Start: at, End: at + d, Queued: q, Device: int32(r), Peer: -1, Label: 1, Stream: 1})
			at += d
		}
	}
}

// jitter is a fixed pseudo-random ±2%.
func jitter(r, i int) float64 { return 1 + 0.02*float64((r*7919+i*104729)%201-100)/100 }

func TestSlowGPUAndHost(t *testing.T) {
	for _, c := range []struct {
		name      string
		kdur      func(r, i int) int64
		gap       func(r int) int64
		steps     int
		kind      Kind
		rank      int32
		afterStep int // the step (0-based) the finding comes in; -1: none ever
	}{
		{name: "healthy, jitter", kdur: func(r, i int) int64 { return int64(float64(ms) * jitter(r, i)) }, gap: func(int) int64 { return 10_000 }, steps: 4, afterStep: -1},
		{name: "GPU 5 at 2x", kdur: func(r, i int) int64 {
			if r == 5 {
				return 2 * ms
			}
			return int64(float64(ms) * jitter(r, i))
		}, gap: func(int) int64 { return 10_000 }, steps: 3, kind: SlowGPU, rank: 5, afterStep: 0},
		{name: "GPU 6 at 1.2x: two steps", kdur: func(r, i int) int64 {
			if r == 6 {
				return 12 * ms / 10
			}
			return int64(float64(ms) * jitter(r, i))
		}, gap: func(int) int64 { return 10_000 }, steps: 3, kind: SlowGPU, rank: 6, afterStep: 1},
		{name: "GPU 6 at 1.03x: below the margin", kdur: func(r, i int) int64 {
			if r == 6 {
				return 103 * ms / 100
			}
			return ms
		}, gap: func(int) int64 { return 10_000 }, steps: 3, afterStep: -1},
		{name: "host of rank 9 launches 3x slower", kdur: func(r, i int) int64 { return int64(float64(ms) * jitter(r, i)) },
			gap: func(r int) int64 {
				if r == 9 {
					return 30_000
				}
				return 10_000
			}, steps: 3, kind: SlowHost, rank: 9, afterStep: 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStepper(8)
			for st := range c.steps {
				s.kernels(16, 50, c.kdur, c.gap)
				s.endStep(100 * ms)
				got := s.d.Result(s.strs)
				want := c.afterStep >= 0 && st >= c.afterStep
				if !want {
					if len(got) > 0 {
						t.Fatalf("step %d: finding %s; want none yet", st, got[0].String())
					}
					continue
				}
				if len(got) != 1 || got[0].Kind != c.kind || got[0].Rank != c.rank {
					t.Fatalf("step %d: findings %v; want one %s on rank %d", st, got, c.kind, c.rank)
				}
				if got[0].Onset != 0 {
					t.Errorf("onset %d; want 0, the start of the first step that showed it", got[0].Onset)
				}
			}
		})
	}
}

// Ranks that stand out alike: every rank of one host slow to launch is the host, its rank
// unknown; two GPUs equally slow are a tie, the finding naming one of them at confidence ½. No
// confidence is 0 (finding.go: it is in (0, 1]).
func TestTiedOutliers(t *testing.T) {
	for _, c := range []struct {
		name       string
		kdur       func(r, i int) int64
		gap        func(r int) int64
		kind       Kind
		rank, host int32
		conf       float64
		culprit    string
	}{
		{name: "host 1's 8 ranks launch 3x slower", kdur: func(r, i int) int64 { return int64(float64(ms) * jitter(r, i)) },
			gap: func(r int) int64 {
				if r/8 == 1 {
					return 30_000
				}
				return 10_000
			}, kind: SlowHost, rank: -1, host: 1, conf: 1, culprit: "host 1 (all its ranks alike: a host-wide cause)"},
		{name: "GPUs 5 and 6 at 2x", kdur: func(r, i int) int64 {
			if r == 5 || r == 6 {
				return 2 * ms
			}
			return int64(float64(ms) * jitter(r, i))
		}, gap: func(int) int64 { return 10_000 }, kind: SlowGPU, rank: 5, host: 0, conf: 0.5, culprit: "rank 5 (host 0 GPU 5)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStepper(8)
			for range 2 {
				s.kernels(32, 50, c.kdur, c.gap)
				s.endStep(100 * ms)
			}
			got := s.d.Result(s.strs)
			if len(got) != 1 || got[0].Kind != c.kind || got[0].Rank != c.rank || got[0].Host != c.host || got[0].Confidence != c.conf || got[0].Culprit() != c.culprit {
				for _, f := range got {
					t.Logf("%s (confidence %g)", f.String(), f.Confidence)
				}
				t.Fatalf("%d findings; want one %s: %s, confidence %g", len(got), c.kind, c.culprit, c.conf)
			}
		})
	}
}

// p2p adds a send from a to b and its recv, taking dur, at time at.
func (s *stepper) p2p(a, b int32, at, dur int64, op uint64) {
	s.add(timeline.Event{Kind: timeline.KindSend, Start: at, End: at + dur, Queued: at, Device: a, Peer: b, Bytes: 1 << 20, Op: op, Stream: 1})
	s.add(timeline.Event{Kind: timeline.KindRecv, Start: at, End: at + dur, Queued: at, Device: b, Peer: a, Bytes: 1 << 20, Op: op, Stream: 2})
}

// A slow NIC on rank 10 (host 1 of 3, a pipeline's middle stage): its sends to rank 18 and its
// receives from rank 2 take 3×; ranks 2 and 18 are slow only in the one transfer they share with it.
func TestSlowLinkPipeline(t *testing.T) {
	s := newStepper(8)
	var op uint64
	for st := range 2 {
		for r := int32(0); r < 16; r++ {
			for i := range 10 {
				op++
				dur := int64(float64(ms) * jitter(int(r), i))
				if r == 2 || r == 10 {
					dur = 3 * ms
				}
				s.p2p(r, r+8, s.t+int64(i)*2*ms, dur, op)
			}
		}
		s.endStep(100 * ms)
		got := s.d.Result(s.strs)
		if len(got) != 1 || got[0].Kind != SlowLink || got[0].Rank != 10 || got[0].Link != timeline.PeakNIC {
			t.Fatalf("step %d: %v; want a slow NIC on rank 10", st, got)
		}
	}
}

// The same pipeline under --fit on one GPU (timeline.AuxEmulated): ranks 2 and 10's transfers
// took 3× as copies on a GPU every rank shares, on no NIC of the topology, so no link of it is
// blamed (the run on an H200 had named "host 0 GPU 6 NIC" a slow link from such copies).
func TestEmulatedTransfersBlameNoLink(t *testing.T) {
	s := newStepper(8)
	var op uint64
	for st := range 2 {
		for r := int32(0); r < 16; r++ {
			for i := range 10 {
				op++
				dur := int64(float64(ms) * jitter(int(r), i))
				if r == 2 || r == 10 {
					dur = 3 * ms
				}
				at := s.t + int64(i)*2*ms
				for _, e := range []timeline.Event{
					{Kind: timeline.KindSend, Start: at, End: at + dur, Queued: at, Device: r, Peer: r + 8, Bytes: 1 << 20, Op: op, Stream: 1},
					{Kind: timeline.KindRecv, Start: at, End: at + dur, Queued: at, Device: r + 8, Peer: r, Bytes: 1 << 20, Op: op, Stream: 2},
				} {
					e.Aux = timeline.AuxEmulated
					s.add(e)
				}
			}
		}
		s.endStep(100 * ms)
		if got := s.d.Result(s.strs); len(got) != 0 {
			t.Fatalf("step %d: %v; want no finding from emulated transfers", st, got)
		}
	}
}

// Ranks that share GPUs (an emulated op seen: --fit) contend for one GPU and one host: a rank's
// kernels or launches slower than its peers' say how they were shared, so no slow GPU or host of
// the topology is named, where the same job on GPUs of their own has its finding (the H200 run had
// named seven "slow GPU"s and both hosts of a 16-rank job on one GPU).
func TestSharedGPUsNoSlowVerdict(t *testing.T) {
	for _, c := range []struct {
		name   string
		shared bool
		gap    func(r int) int64
		kdur   func(r, i int) int64
		kind   Kind
	}{
		{"GPU 5 at 2x", false, func(int) int64 { return 10_000 }, func(r, i int) int64 { return int64(float64(ms)*jitter(r, i)) * int64(1+b2i(r == 5)) }, SlowGPU},
		{"GPU 5 at 2x, ranks sharing GPUs", true, func(int) int64 { return 10_000 }, func(r, i int) int64 { return int64(float64(ms)*jitter(r, i)) * int64(1+b2i(r == 5)) }, 0},
		{"host of rank 9 launches 3x slower, ranks sharing GPUs", true, func(r int) int64 { return 10_000 * int64(1+2*b2i(r == 9)) },
			func(r, i int) int64 { return int64(float64(ms) * jitter(r, i)) }, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStepper(8)
			for st := range 3 {
				if c.shared {
					s.add(timeline.Event{Kind: timeline.KindSend, Start: s.t, End: s.t + 50_000, Queued: s.t, Device: 0, Peer: 8, Bytes: 1 << 20,
						Op: uint64(st + 1), Stream: 2, Aux: timeline.AuxEmulated})
				}
				s.kernels(16, 50, c.kdur, c.gap)
				s.endStep(100 * ms)
			}
			got := s.d.Result(s.strs)
			if c.kind == 0 && len(got) != 0 || c.kind != 0 && (len(got) != 1 || got[0].Kind != c.kind) {
				t.Fatalf("findings %v; want %v", got, map[bool]string{true: "none", false: c.kind.String()}[c.kind == 0])
			}
		})
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Every rank's collective slows together (one communicator of all ranks): the ranks tie, and the
// link that never moved more than a third of its peers' peak is the culprit.
func TestSlowLinkWholeCommunicator(t *testing.T) {
	s := newStepper(8)
	var op uint64
	for st := range 3 {
		dur := 10 * ms
		if st > 0 {
			dur = 25 * ms
		}
		for i := range 4 {
			op++
			for r := int32(0); r < 16; r++ {
				at := s.t + int64(i)*60*ms
				s.add(timeline.Event{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Start: at, End: at + dur, Queued: at,
					Device: r, Peer: -1, Ranks: 16, Bytes: 1 << 30, Op: op, Comm: 1, Stream: 1})
			}
		}
		for w := range 4 {
			for r := int32(0); r < 16; r++ {
				b := int64(40 << 30 / 20) // 40 GB/s over 50 ms
				if r == 13 && st > 0 {
					b /= 3
				}
				for dir := range 2 {
					s.add(timeline.Event{Kind: timeline.KindLinkBytes, Sub: timeline.PackLink(timeline.PeakNIC, dir), Start: s.t + int64(w)*50*ms,
						End: s.t + int64(w+1)*50*ms, Bytes: b, Device: r, Peer: -1})
				}
			}
		}
		s.endStep(240 * ms)
		got := s.d.Result(s.strs)
		if st == 0 {
			if len(got) != 0 {
				t.Fatalf("healthy step: %v", got)
			}
			continue
		}
		if len(got) != 1 || got[0].Rank != 13 || got[0].Kind != SlowLink || got[0].Link != timeline.PeakNIC {
			t.Fatalf("step %d: %v; want rank 13's NIC", st, got)
		}
	}
}

// Hangs from what is in flight: the collective, its sequence number and communicator, the ranks
// that never entered it, once the wait passed the threshold, and only the root of a chain.
func TestPendingHangs(t *testing.T) {
	for _, c := range []struct {
		name     string
		inflight []timeline.Event
		now      int64
		kind     Kind
		rank     int32
		evidence string
	}{
		{name: "too early", now: 1900 * ms, inflight: waits(1000*ms, 0, 1, 2)},
		{name: "rank 3 never entered", now: 2100 * ms, inflight: waits(1000*ms, 0, 1, 2), kind: Hang, rank: 3,
			evidence: "all_reduce #3 on communicator 7: 3 ranks waited ≥ 1.00 s in it when found; rank 3 never entered it"},
		{name: "chain: rank 5 waits for rank 2, which waits for rank 3", now: 2100 * ms,
			inflight: append(waits(1000*ms, 0, 1, 2), timeline.Event{Kind: timeline.KindPeerWait, Start: 1000 * ms, Device: 5, Peer: 2, Op: 500}),
			kind:     Hang, rank: 3, evidence: "rank 3 never entered it"},
		{name: "rank 3 never joined", now: 6000 * ms,
			inflight: append(waits(1000*ms, 0, 1, 2), timeline.Event{Kind: timeline.KindCommInit, Start: 0, Device: 3, Peer: -1, Comm: 7}),
			kind:     MissingRank, rank: 3, evidence: "rank 3 never finished joining the communicator"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStepper(8)
			for r := int32(0); r < 3; r++ {
				s.add(timeline.Event{Kind: timeline.KindCommInit, Start: 0, End: 900 * ms, Device: r, Peer: -1, Comm: 7, Ranks: 4})
			}
			s.add(timeline.Event{Kind: timeline.KindCommInit, Start: 0, End: 900 * ms, Device: 3, Peer: -1, Comm: 7, Ranks: 4})
			if c.kind == MissingRank {
				s = newStepper(8)
				for r := int32(0); r < 3; r++ {
					s.add(timeline.Event{Kind: timeline.KindCommInit, Start: 0, End: 900 * ms, Device: r, Peer: -1, Comm: 7, Ranks: 4})
				}
			}
			for op := uint64(1); op <= 2; op++ {
				for r := int32(0); r < 4; r++ {
					s.add(timeline.Event{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Start: 900 * ms, End: 950 * ms, Device: r, Peer: -1, Comm: 7, Op: op, Ranks: 4})
				}
			}
			got := s.d.Pending(c.now, c.inflight)
			if c.kind == 0 {
				if len(got) != 0 {
					t.Fatalf("%v; want no finding", got)
				}
				return
			}
			if len(got) != 1 || got[0].Kind != c.kind || got[0].Rank != c.rank || !strings.Contains(got[0].Evidence, c.evidence) {
				t.Fatalf("%+v; want one %s naming rank %d saying %q", got, c.kind, c.rank, c.evidence)
			}
			if got[0].At != 2000*ms && c.kind == Hang {
				t.Errorf("found at %d; want 2 s (the wait's start plus the 1 s threshold)", got[0].At)
			}
			if again := s.d.Pending(c.now+ms, c.inflight); len(again) != 0 {
				t.Errorf("the same hang reported twice")
			}
		})
	}
}

func waits(at int64, ranks ...int32) []timeline.Event {
	var out []timeline.Event
	for _, r := range ranks {
		out = append(out, timeline.Event{Kind: timeline.KindPeerWait, Sub: uint8(timeline.CollAllReduce), Start: at, Device: r, Peer: -1, Comm: 7, Op: 3})
	}
	return out
}

// The watchdog's alert becomes a finding naming the ranks its message names.
func TestWatchdogAlert(t *testing.T) {
	s := newStepper(8)
	msg := "watchdog: all_gather op 2177 on rank 0 waited 10000.000 ms for ranks [3 5] that never arrived (67108864 bytes)"
	s.add(timeline.Event{Kind: timeline.KindAlert, Status: timeline.StatusTimeout, Start: 11 * 1000 * ms, Device: 0, Peer: -1, Op: 2177, Label: s.strs.ID(msg)})
	got := s.d.Result(s.strs)
	if len(got) != 1 || got[0].Kind != Hang || got[0].Rank != 3 || got[0].MissingN != 2 || got[0].Onset != 1000*ms {
		t.Fatalf("%+v; want a hang naming ranks 3 and 5 since 1 s", got)
	}
}

// The wait in a watchdog's message is read as the engine writes it (units.Dur).
func TestWatchdogWaited(t *testing.T) {
	for _, c := range []struct {
		msg  string
		want int64
	}{
		{"all_reduce op 121 on rank 0 waited 10.1 s for ranks [3] that never arrived", 10_100 * ms},
		{"send op 1 from rank 0 waited 812 ms for rank 1", 812 * ms},
		{"waited 10000.000 ms for", 10_000 * ms},
		{"waited 1m40s for", 100_000 * ms},
		{"waited 15.2 µs for", 15_200},
	} {
		if got, ok := waited(c.msg); !ok || got != c.want {
			t.Errorf("waited(%q) = %d, %v; want %d", c.msg, got, ok, c.want)
		}
	}
	if _, ok := waited("no wait here"); ok {
		t.Errorf("a message without a wait read as one")
	}
}

// A rank last at every barrier, 1.5 ms after the others, is a straggler (the barriers' table as
// a finding); one last at random barriers, as jitter makes some rank last, is not.
func TestBarrierStraggler(t *testing.T) {
	for _, c := range []struct {
		name string
		last func(i int) int32
		late int64
		want bool
	}{
		{name: "rank 3 always", last: func(int) int32 { return 3 }, late: 1500_000, want: true},
		{name: "whoever, by jitter", last: func(i int) int32 { return int32(i*5) % 8 }, late: 20_000},
		{name: "rank 3 always, barely late", last: func(int) int32 { return 3 }, late: 10_000},
	} {
		s := newStepper(8)
		for st := range 2 {
			for i := range 4 {
				at := s.t + int64(i)*5*ms
				for r := int32(0); r < 8; r++ {
					arr := at + int64(r)*1000
					if r == c.last(i) {
						arr = at + 8000 + c.late
					}
					s.add(timeline.Event{Kind: timeline.KindBarrier, Start: arr, End: at + 8000 + c.late, Device: r, Peer: -1, Op: uint64(st*10 + i + 1), Ranks: 8})
				}
			}
			s.endStep(20 * ms)
		}
		got := s.d.Result(s.strs)
		if c.want != (len(got) == 1 && got[0].Kind == SlowHost && got[0].Rank == 3) || (!c.want && len(got) > 0) {
			t.Errorf("%s: %v; want a straggler finding: %v", c.name, got, c.want)
		}
	}
}

// A host's eight ranks run their tensor-parallel all-reduces in one ring: when one NVLink port is
// degraded, every rank's collective slows alike and every link carries the same bytes per window,
// but the degraded link is busy all the time at 30% of the rate and its peers at full rate part of
// it. The rate while busy names GPU 5; without it the finding could only name the host.
func TestSlowLinkByRateWhileBusy(t *testing.T) {
	for _, c := range []struct {
		name string
		link int
		cls  int // index in the diagnosis's link classes
	}{{"NVLink", timeline.PeakNVLink, 1}, {"NIC", timeline.PeakNIC, 2}} {
		t.Run(c.name, func(t *testing.T) {
			s := newStepper(8)
			var op uint64
			for st := range 3 {
				dur := 10 * ms
				if st > 0 {
					dur = 33 * ms
				}
				for i := range 4 {
					op++
					for r := int32(0); r < 8; r++ {
						at := s.t + int64(i)*50*ms
						s.add(timeline.Event{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Start: at, End: at + dur, Queued: at,
							Device: r, Peer: -1, Ranks: 8, Bytes: 1 << 30, Op: op, Comm: 1, Stream: 1})
					}
				}
				for w := range 4 {
					for r := int32(0); r < 8; r++ {
						// Every link carried the same bytes; healthy, in 10 ms of busy time.
						b, busy := int64(1<<30), uint64(10*ms)
						if st > 0 {
							busy = uint64(float64(10*ms) * jitter(int(r), w))
							if r == 5 {
								busy = uint64(10 * ms / 3 * 10) // at 30%: busy all of the 33 ms
							}
						}
						for dir := range 2 {
							s.add(timeline.Event{Kind: timeline.KindLinkBytes, Sub: timeline.PackLink(c.link, dir), Start: s.t + int64(w)*50*ms,
								End: s.t + int64(w+1)*50*ms, Bytes: b, Op: busy, Device: r, Peer: -1})
						}
					}
				}
				s.endStep(200 * ms)
				got := s.d.Result(s.strs)
				if st == 0 {
					if len(got) != 0 {
						t.Fatalf("healthy step: %v", got)
					}
					continue
				}
				if len(got) != 1 || got[0].Rank != 5 || got[0].Kind != SlowLink || got[0].Link != c.link ||
					!strings.Contains(got[0].Evidence, "moved at 30% of its peers' median rate while busy") {
					t.Fatalf("step %d: %+v; want rank 5's %s, at 30%% of its peers' rate while busy", st, got, c.name)
				}
				if got[0].Culprit() != "host 0 GPU 5 "+c.name {
					t.Errorf("culprit %q", got[0].Culprit())
				}
			}
		})
	}
}

// A leaf's ports to the spines degraded: every rank's collective slows alike, the ranks' NICs move
// at their line rate while busy (the flows are held back at the switch, not at them), and of the
// eight leaves' ports one moves at 25% of its peers' rate while busy: it is the culprit.
func TestSlowSwitchPortByRateWhileBusy(t *testing.T) {
	s := newStepper(8)
	var op uint64
	slow := timeline.PackPort(1, 2)
	for st := range 3 {
		dur := 10 * ms
		if st > 0 {
			dur = 40 * ms
		}
		for i := range 4 {
			op++
			for r := int32(0); r < 32; r++ {
				at := s.t + int64(i)*50*ms
				s.add(timeline.Event{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Start: at, End: at + dur, Queued: at,
					Device: r, Peer: -1, Ranks: 32, Bytes: 1 << 30, Op: op, Comm: 1, Stream: 1})
			}
		}
		for w := range 4 {
			from, to := s.t+int64(w)*50*ms, s.t+int64(w+1)*50*ms
			for r := int32(0); r < 32; r++ {
				for dir := range 2 {
					s.add(timeline.Event{Kind: timeline.KindLinkBytes, Sub: timeline.PackLink(timeline.PeakNIC, dir), Start: from, End: to,
						Bytes: 1 << 28, Op: uint64(float64(5*ms) * jitter(int(r), w)), Device: r, Peer: -1})
				}
			}
			for g := range 2 {
				for rail := range 4 {
					busy := uint64(10 * ms)
					if st > 0 && timeline.PackPort(g, rail) == slow {
						busy = 40 * uint64(ms)
					}
					for dir := range 2 {
						s.add(timeline.Event{Kind: timeline.KindLinkBytes, Sub: timeline.PackLink(timeline.LinkFabric, dir), Start: from, End: to,
							Bytes: 1 << 30, Op: busy, Device: timeline.NoDevice, Peer: -1, Aux: timeline.PackPort(g, rail)})
					}
				}
			}
		}
		s.endStep(200 * ms)
		got := s.d.Result(s.strs)
		if st == 0 {
			if len(got) != 0 {
				t.Fatalf("healthy step: %v", got)
			}
			continue
		}
		if len(got) != 1 || got[0].Kind != SlowLink || got[0].Link != timeline.LinkFabric || got[0].Port != slow || got[0].Rank != -1 ||
			got[0].Culprit() != "leaf g1.r2 spine ports" || !strings.Contains(got[0].Evidence, "moved at 25% of their peers' median rate while busy") {
			t.Fatalf("step %d: %+v; want leaf g1.r2's spine ports at 25%%", st, got)
		}
	}
}

// A NIC that goes down stalls the ring: in the windows it is down it is the only link busy (data
// waits on it) and moves nothing, while its peers wait idle, so there are no peers in the window
// to compare it with; their rate in the last window they moved in is the reference. Down in two
// windows and up at its peers' rate between, it flaps, and the finding says so.
func TestStalledLinkAlone(t *testing.T) {
	s := newStepper(8)
	var op uint64
	for st := range 2 {
		dur := 10 * ms
		if st > 0 {
			dur = 60 * ms
		}
		for i := range 2 {
			op++
			for r := int32(0); r < 16; r++ {
				at := s.t + int64(i)*100*ms
				s.add(timeline.Event{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Start: at, End: at + dur, Queued: at,
					Device: r, Peer: -1, Ranks: 16, Bytes: 1 << 30, Op: op, Comm: 1, Stream: 1})
			}
		}
		for w := range 4 {
			from, to := s.t+int64(w)*50*ms, s.t+int64(w+1)*50*ms
			for r := int32(0); r < 16; r++ {
				b, busy := int64(1<<29), uint64(10*ms)
				if st > 0 && w%2 == 1 { // the down half: only rank 13's NIC is busy, moving nothing
					if r != 13 {
						continue
					}
					b, busy = 0, uint64(50*ms)
				}
				for dir := range 2 {
					s.add(timeline.Event{Kind: timeline.KindLinkBytes, Sub: timeline.PackLink(timeline.PeakNIC, dir), Start: from, End: to,
						Bytes: b, Op: busy, Device: r, Peer: -1})
				}
			}
		}
		s.endStep(200 * ms)
	}
	got := s.d.Result(s.strs)
	if len(got) != 1 || got[0].Rank != 13 || got[0].Link != timeline.PeakNIC || !strings.Contains(got[0].Evidence, "its NIC flaps: down (0% of its peers' median rate while busy) in 2 windows of the run, back up at its peers' rate in 1 window between") {
		t.Fatalf("%+v; want rank 13's NIC, moving nothing while busy, down and up again: flapping", got)
	}
}

// A slow link whose rank is not known (its transfers' two ends on two hosts tie, and no link rate
// tells them apart) holds over steps only while the same ranks tie. A healthy job's contention
// slows a different pipeline pair a little in each step (llm-train on 16 hosts with ep=4: 1.33×,
// ranks 96 … 121 in the first step, 98 … 124 in the second): before, the two steps counted as one
// link slow twice and made a "slow link (which: unknown)" finding on a healthy run.
func TestUnknownLinkSameRanksEachStep(t *testing.T) {
	for _, c := range []struct {
		name string
		slow [2]int32 // the sender of the slow pair in each step; its receiver is 16 ranks on
		want bool
	}{
		{"the same pair slow in both steps", [2]int32{3, 3}, true},
		{"another pair slow in each step", [2]int32{3, 5}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStepper(8)
			var op uint64
			for st := range 2 {
				for r := int32(0); r < 16; r++ {
					for i := range 10 {
						op++
						dur := int64(float64(ms) * jitter(int(r), i))
						if r == c.slow[st] {
							dur = 135 * ms / 100 // 1.35×: slow, but under strong (one step is not enough)
						}
						s.p2p(r, r+16, s.t+int64(i)*2*ms, dur, op)
					}
				}
				s.endStep(100 * ms)
			}
			got := s.d.Result(s.strs)
			if !c.want {
				if len(got) != 0 {
					t.Fatalf("findings %v; want none", got)
				}
				return
			}
			if len(got) != 1 || got[0].Kind != SlowLink || got[0].Rank != -1 || got[0].Host != -1 || got[0].Culprit() != "a link (which: unknown)" {
				t.Fatalf("findings %v; want one slow link, which unknown", got)
			}
		})
	}
}
