package fold

import (
	"testing"

	"github.com/xfertop/xfertop/join"
	"github.com/xfertop/xfertop/timeline"
)

func str16(s string) (b [16]byte) { copy(b[:], s); return }
func str8(s string) (b [8]byte)   { copy(b[:], s); return }

// script builds records as the C side queues them.
type script struct{ recs []Record }

func (s *script) start(t int64, typ, id, parent uint64, f func(*Record)) {
	r := Record{Op: RecStart, Ctx: 1, Type: typ, ID: id, Parent: parent, T: t, Peer: -1}
	if f != nil {
		f(&r)
	}
	s.recs = append(s.recs, r)
}
func (s *script) stop(t int64, id uint64) {
	s.recs = append(s.recs, Record{Op: RecStop, ID: id, T: t})
}
func (s *script) state(t int64, id uint64, st uint16, a uint64) {
	s.recs = append(s.recs, Record{Op: RecState, ID: id, T: t, State: st, A: a})
}

func coll(fn string, seq, count uint64) func(*Record) {
	return func(r *Record) {
		r.Func, r.Dtype, r.Algo, r.Proto = str16(fn), str16("ncclFloat32"), str16("RING"), str8("LL128")
		r.A, r.B, r.C, r.D = seq, count, 2, 3 // group 3
	}
}

// allReduce is NCCL 2.28's sequence for one all-reduce in an implicit group, with kernel channels.
func allReduce(s *script, base int64, seq uint64, id uint64, kernel bool) {
	s.start(base, TypeGroupAPI, id, 0, func(r *Record) { r.A = 1 })
	s.start(base+10, TypeCollAPI, id+1, id, func(r *Record) { r.Func, r.B = str16("AllReduce"), 0xabc })
	s.stop(base+20, id+1)
	s.start(base+30, TypeGroup, id+2, 0, nil)
	s.start(base+40, TypeColl, id+3, id+1, func(r *Record) { coll("AllReduce", seq, 256)(r); r.D = id + 2 })
	s.stop(base+50, id+3)
	s.stop(base+60, id+2)
	s.stop(base+70, id)
	if kernel {
		for c := range uint64(2) {
			s.start(base+100, TypeKernelCh, id+4+c, id+3, func(r *Record) { r.A, r.C = 1e18+c*1000, c })
			s.state(base+5000, id+4+c, StateKernelChStop, 1e18+2000+c*500)
			s.stop(base+5000+int64(c), id+4+c)
		}
	}
}

func run(mask uint64, s *script, tick int64) ([]timeline.Event, *timeline.Strings, Stats) {
	strs := timeline.NewStrings()
	var out []timeline.Event
	f := New(strs, func(e *timeline.Event) { out = append(out, *e) }, Config{GlobalRank: -1, Mask: mask, Posted: true})
	f.Init(1, Comm{Hash: 0xfeed, Name: "world", NNodes: 1, NRanks: 4, Rank: 2}, 0)
	for i := range s.recs {
		f.Add(&s.recs[i])
	}
	if tick > 0 {
		f.Tick(tick)
	}
	return out, strs, f.Stats()
}

func kinds(evs []timeline.Event, k timeline.Kind) []timeline.Event {
	var out []timeline.Event
	for _, e := range evs {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

func TestFoldCollective(t *testing.T) {
	cases := []struct {
		name       string
		mask       uint64
		kernel     bool
		tick       int64
		start, end int64
	}{
		// Kernel channels: 2.5 µs of GPU time (first start to last stop), ending when the host saw it end.
		{"kernel", MaskKernel, true, 0, 5001 - 2500, 5001},
		// API only: the enqueue on the host.
		{"api", MaskAPI, false, 0, 40, 50},
		// Proxy: waits for proxy ops that may still come; none does, so Tick finishes it after the grace.
		{"proxy-grace", MaskProxy, false, 1e9, 40, 50},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &script{}
			allReduce(s, 0, 7, 10, c.kernel)
			evs, strs, st := run(c.mask, s, c.tick)
			colls := kinds(evs, timeline.KindCollective)
			if len(colls) != 1 {
				t.Fatalf("%d collectives: %+v", len(colls), evs)
			}
			e := colls[0]
			if e.Start != c.start || e.End != c.end || e.Bytes != 1024 || e.Ranks != 4 || e.Device != 2 ||
				e.Aux != timeline.PackNCCL(timeline.AlgoRing, timeline.ProtoLL128, 2) || e.AlgoProto() != "Ring_LL128" ||
				timeline.CollOp(e.Sub) != timeline.CollAllReduce || e.Op != CollOpID(0xfeed, "AllReduce", 7) || e.Queued != 10 {
				t.Errorf("collective %+v", e)
			}
			if got := strs.Lookup(e.Label); got != "RING LL128 2ch" {
				t.Errorf("label %q", got)
			}
			if g := kinds(evs, timeline.KindGroupLaunch); len(g) != 1 || g[0].Aux != 1 || g[0].Group != e.Group {
				t.Errorf("group launches %+v (collective's group %d)", g, e.Group)
			}
			if m := kinds(evs, timeline.KindMark); len(m) != 1 || m[0].Op != e.Op || strs.Lookup(m[0].Label) != join.PostedLabel || m[0].Peer != 2 ||
				m[0].Stream != e.Stream || m[0].Bytes != e.Bytes { // where and what the console draws running until it ends
				t.Errorf("posted marks %+v", m)
			}
			if r := kinds(evs, timeline.KindRuntime); len(r) != 1 || strs.Lookup(r[0].Label) != "ncclAllReduce" {
				t.Errorf("runtime events %+v (the implicit group is not one)", r)
			}
			if st != (Stats{OpNs: e.End - e.Start}) { // the one collective's time, nothing lost
				t.Errorf("stats %+v; want OpNs %d", st, e.End-e.Start)
			}
		})
	}
	t.Run("graph-captured", func(t *testing.T) {
		s := &script{}
		allReduce(s, 0, 7, 10, true)
		s.recs[1].C = 1 // collApi.graphCaptured
		evs, _, _ := run(MaskKernel, s, 0)
		colls := kinds(evs, timeline.KindCollective)
		if len(colls) != 1 || !colls[0].Captured() || colls[0].Queued != -1 || colls[0].AlgoProto() != "Ring_LL128" {
			t.Fatalf("collectives %+v; want one marked captured, its launch unknown, its NCCL choice kept", colls)
		}
	})
	t.Run("proxy-waits", func(t *testing.T) {
		s := &script{}
		allReduce(s, 0, 7, 10, false)
		evs, _, _ := run(MaskProxy, s, 0)
		if n := len(kinds(evs, timeline.KindCollective)); n != 0 {
			t.Fatalf("emitted before its grace period: %d", n)
		}
	})
}

func TestFoldSizesAndPairs(t *testing.T) {
	s := &script{}
	s.start(0, TypeColl, 1, 0, coll("AllGather", 0, 100))
	s.stop(1, 1)
	s.start(2, TypeColl, 2, 0, coll("ReduceScatter", 0, 100))
	s.stop(3, 2)
	s.start(4, TypeColl, 3, 0, coll("Broadcast", 0, 100))
	s.recs[len(s.recs)-1].Peer = 1 // root
	s.stop(5, 3)
	for i, dir := range []string{"Send", "Send", "Recv"} {
		id := uint64(10 + i)
		s.start(int64(6+i), TypeP2p, id, 0, func(r *Record) { r.Func, r.Dtype, r.B, r.Peer = str16(dir), str16("ncclBfloat16"), 8, 0 })
		s.stop(int64(6+i), id)
	}
	evs, strs, _ := run(MaskAPI, s, 0)
	colls := kinds(evs, timeline.KindCollective)
	want := []struct {
		op    timeline.CollOp
		bytes int64
		peer  int32
	}{{timeline.CollAllGather, 1600, -1}, {timeline.CollReduceScatter, 1600, -1}, {timeline.CollBroadcast, 400, 1}}
	for i, w := range want {
		if timeline.CollOp(colls[i].Sub) != w.op || colls[i].Bytes != w.bytes || colls[i].Peer != w.peer {
			t.Errorf("collective %d: %+v, want %v", i, colls[i], w)
		}
	}
	sends, recvs := kinds(evs, timeline.KindSend), kinds(evs, timeline.KindRecv)
	if len(sends) != 2 || len(recvs) != 1 || sends[0].Bytes != 16 || strs.Lookup(sends[0].Label) != "Send" {
		t.Fatalf("sends %+v recvs %+v", sends, recvs)
	}
	// Rank 2's k-th send to rank 0 pairs with rank 0's k-th receive from rank 2.
	if sends[0].Op != P2POpID(0xfeed, 2, 0, 0) || sends[1].Op != P2POpID(0xfeed, 2, 0, 1) || recvs[0].Op != P2POpID(0xfeed, 0, 2, 0) {
		t.Errorf("op ids: sends %x %x recv %x", sends[0].Op, sends[1].Op, recvs[0].Op)
	}
}

func TestFoldProxyAndOrphans(t *testing.T) {
	s := &script{}
	s.start(0, TypeColl, 1, 0, coll("AllReduce", 0, 64))
	s.stop(10, 1)
	s.start(20, TypeProxyOp, 2, 1, func(r *Record) { r.A, r.C, r.D, r.Peer = 2, 3, 1, 1 })
	s.start(21, TypeProxyStep, 3, 2, nil)
	s.state(22, 3, StateSendGPUWait, 128)
	s.state(25, 3, StateSendPeerWait, 128)
	s.state(40, 3, StateSendWait, 128)
	s.stop(50, 3)
	s.stop(60, 2)
	s.stop(70, 99)                    // never started
	s.start(71, 1<<30, 100, 0, nil)   // a type from a newer NCCL
	s.state(72, 98, StateRecvWait, 0) // never started
	evs, strs, st := run(MaskProxy, s, 1e9)
	waits := kinds(evs, timeline.KindPeerWait)
	if len(waits) != 1 || waits[0].Start != 25 || waits[0].End != 40 || waits[0].Bytes != 128 || waits[0].Peer != 1 {
		t.Errorf("peer waits %+v", waits)
	}
	marks := kinds(evs, timeline.KindMark)
	net := marks[len(marks)-1]
	if strs.Lookup(net.Label) != "net send ch3" || net.Bytes != 128 || net.Start != 20 || net.End != 60 {
		t.Errorf("proxy op %+v (%q)", net, strs.Lookup(net.Label))
	}
	if c := kinds(evs, timeline.KindCollective); len(c) != 1 || c[0].End != 60 {
		t.Errorf("collective %+v: want it to end with its last proxy op", c)
	}
	if st.Orphans != 2 || st.Unknown != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestParseLevel(t *testing.T) {
	for _, c := range []struct {
		in   string
		mask uint64
		ok   bool
	}{
		{"", MaskColl, true}, {"coll", MaskColl, true}, {"api", MaskAPI, true}, {"proxy,kernel", MaskAll, true}, {"ALL", MaskAll, true},
		{"4095", 4095, true}, {"api,", 0, false}, {"verbose", 0, false}, {"99999999999", 0, false},
	} {
		m, ok := ParseLevel(c.in)
		if ok != c.ok || (ok && m != c.mask) {
			t.Errorf("ParseLevel(%q) = %#x, %v; want %#x, %v", c.in, m, ok, c.mask, c.ok)
		}
	}
}

// BenchmarkFold is the sender's side: records folded per second (a kernel-timed all-reduce is 12).
func BenchmarkFold(b *testing.B) {
	strs := timeline.NewStrings()
	n := 0
	f := New(strs, func(*timeline.Event) { n++ }, Config{GlobalRank: -1, Mask: MaskKernel})
	f.Init(1, Comm{Hash: 1, NRanks: 8, Rank: 0}, 0)
	s := &script{}
	for i := range 64 {
		allReduce(s, int64(i)*10000, uint64(i), uint64(i)*16+16, true)
	}
	b.ReportAllocs()
	b.ResetTimer()
	recs := 0
	for i := 0; i < b.N; i++ {
		for j := range s.recs {
			r := s.recs[j]
			r.ID += uint64(i) << 32
			if r.Parent != 0 {
				r.Parent += uint64(i) << 32
			}
			if r.Type == TypeColl {
				r.D += uint64(i) << 32
			}
			f.Add(&r)
		}
		recs += len(s.recs)
	}
	b.ReportMetric(float64(recs)/b.Elapsed().Seconds(), "records/s")
}

// A task waits for its kernel channels however late NCCL's proxy thread starts them (a loaded
// host): by events, not by the clock. Channels that never come are given up when a later task of
// the communicator has all of its own, or after StaleNs.
func TestFoldWaitsForKernelChannels(t *testing.T) {
	const grace = int64(50e6) // the default grace period, for proxy ops
	for _, c := range []struct {
		name string
		// lost: the first all-reduce's channel records never reach the folder (dropped);
		// second: a second all-reduce (seq 8, with its channels) follows; tick: Tick at this time
		// between the first all-reduce's stop and its channels.
		lost, second bool
		tick         int64
		want         [][2]int64 // collectives (start, end), in the order emitted
	}{
		// The proxy thread is 10 grace periods late: the GPU timers still give the time.
		{"late channels", false, false, 10 * grace, [][2]int64{{5001 - 2500, 5001}}},
		{"late channels, a later task", false, true, 10 * grace, [][2]int64{{5001 - 2500, 5001}, {1e6 + 5001 - 2500, 1e6 + 5001}}},
		// Lost channels: the later task's channels say they are not coming; the host's times.
		{"lost channels, a later task", true, true, 10 * grace, [][2]int64{{1e6 + 5001 - 2500, 1e6 + 5001}, {40, 50}}},
		// Lost, and nothing follows: waited for until StaleNs.
		{"lost channels, stale", true, false, 61e9, [][2]int64{{40, 50}}},
		{"lost channels, not yet stale", true, false, 59e9, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			first := &script{}
			allReduce(first, 0, 7, 10, true)
			split := len(first.recs) - 6 // the two channels' start, state and stop
			recs := first.recs[:split]
			channels := first.recs[split:]
			strs := timeline.NewStrings()
			var out []timeline.Event
			f := New(strs, func(e *timeline.Event) { out = append(out, *e) }, Config{GlobalRank: -1, Mask: MaskKernel})
			f.Init(1, Comm{Hash: 0xfeed, NRanks: 4, Rank: 2}, 0)
			for i := range recs {
				f.Add(&recs[i])
			}
			f.Tick(c.tick)
			if !c.lost {
				for i := range channels {
					f.Add(&channels[i])
				}
			}
			if c.second {
				next := &script{}
				allReduce(next, 1e6, 8, 100, true)
				for i := range next.recs {
					f.Add(&next.recs[i])
				}
			}
			f.Tick(c.tick)
			colls := kinds(out, timeline.KindCollective)
			if len(colls) != len(c.want) {
				t.Fatalf("%d collectives %+v; want %v", len(colls), colls, c.want)
			}
			for i, w := range c.want {
				if colls[i].Start != w[0] || colls[i].End != w[1] {
					t.Errorf("collective %d: %d..%d; want %d..%d", i, colls[i].Start, colls[i].End, w[0], w[1])
				}
			}
		})
	}
}
