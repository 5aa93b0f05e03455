package diagnosis

import (
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// Each rank of host 0 sends one buffer a step to its peer on host 1 and receives one back
// (crosshost): when host 1 GPU 3's NIC is down, the one send across it stalls 50 ms while every
// other takes 1 ms. One slow transfer per rank is a suspect when it stalled that far past its
// reference, and the NIC, down in that window and up at its peers' rate in the next, flaps.
func TestFlapOneTransferPerRank(t *testing.T) {
	s := newStepper(8)
	var op uint64
	for st := range 4 {
		down := st == 2
		dur := func(r int32) int64 {
			if down && (r == 3 || r == 11) {
				return 50 * ms
			}
			return ms
		}
		for r := int32(0); r < 8; r++ {
			op++
			for _, x := range []struct {
				kind      timeline.Kind
				dev, peer int32
			}{{timeline.KindSend, r, r + 8}, {timeline.KindRecv, r + 8, r}, {timeline.KindSend, r + 8, r}, {timeline.KindRecv, r, r + 8}} {
				d := ms
				if x.kind == timeline.KindSend && x.dev == 3 || x.kind == timeline.KindRecv && x.dev == 11 {
					d = dur(x.dev)
				}
				s.add(timeline.Event{Kind: x.kind, Start: s.t, End: s.t + d, Queued: s.t, Device: x.dev, Peer: x.peer, Bytes: 32 << 20, Op: op, Comm: 1, Stream: 1})
			}
		}
		// The step's one link window: every NIC at its line rate, host 1 GPU 3's down in step 2.
		for r := int32(0); r < 16; r++ {
			b, busy := int64(32<<20), uint64(ms)
			if down && r == 11 {
				b, busy = 0, uint64(49*ms)
			}
			for dir := range 2 {
				s.add(timeline.Event{Kind: timeline.KindLinkBytes, Sub: timeline.PackLink(timeline.PeakNIC, dir), Start: s.t, End: s.t + 50*ms,
					Bytes: b, Op: busy, Device: r, Peer: -1})
			}
		}
		s.endStep(50 * ms)
	}
	got := s.d.Result(s.strs)
	if len(got) != 1 || got[0].Kind != SlowLink || got[0].Rank != 11 || got[0].Link != timeline.PeakNIC {
		t.Fatalf("findings %+v; want host 1 GPU 3's NIC", got)
	}
	if want := "its NIC went down (0% of its peers' median rate while busy"; !strings.Contains(got[0].Evidence, want) {
		t.Errorf("evidence %q; want %q", got[0].Evidence, want)
	}
}

// A moderate NVLink fault (its port at 0.7 of its line rate) slows its host's tensor-parallel
// ring alike on every rank; the port's rate while busy, 70% of its peers', names it, as it
// names a port at 0.3. Before, busy links were compared at below 70% of their peers' rate, and a
// port at 0.72 (the simulator's 0.7, with its protocol overhead) was placed only on its host.
func TestModerateNVLinkPlaced(t *testing.T) {
	for _, share := range []float64{0.3, 0.72} {
		s := newStepper(8)
		var op uint64
		for st := range 3 {
			for i := range 2 {
				op++
				for h := int32(0); h < 4; h++ {
					for g := int32(0); g < 8; g++ {
						r := h*8 + g
						dur := 10 * ms
						if st > 0 && h == 1 {
							dur = int64(float64(10*ms) / share) // host 1's ring waits for its slow port
						}
						at := s.t + int64(i)*100*ms
						s.add(timeline.Event{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Start: at, End: at + dur, Queued: at,
							Device: r, Peer: -1, Ranks: 8, Bytes: 1 << 28, Op: op*8 + uint64(h), Comm: uint32(1 + h), Stream: 1})
					}
				}
			}
			for w := range 4 {
				from, to := s.t+int64(w)*50*ms, s.t+int64(w+1)*50*ms
				for r := int32(0); r < 32; r++ {
					b, busy := int64(1<<28), uint64(10*ms)
					if st > 0 && r == 13 {
						b = int64(float64(b) * share) // busy as long, moving share of it
					}
					for dir := range 2 {
						s.add(timeline.Event{Kind: timeline.KindLinkBytes, Sub: timeline.PackLink(timeline.PeakNVLink, dir), Start: from, End: to,
							Bytes: b, Op: busy, Device: r, Peer: -1})
					}
				}
			}
			s.endStep(200 * ms)
		}
		got := s.d.Result(s.strs)
		if len(got) != 1 || got[0].Kind != SlowLink || got[0].Rank != 13 || got[0].Link != timeline.PeakNVLink || got[0].Confidence < 0.99 {
			t.Errorf("port at %.1f: findings %+v; want host 1 GPU 5's NVLink (rank 13) at confidence 1", share, got)
		}
	}
}
