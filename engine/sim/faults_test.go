package sim_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/timeline"
)

// faultSim builds a jitter-free simulator of the named topology with the faults given as flags.
func faultSim(t *testing.T, topo string, specs ...string) (*engine.Client, *timeline.Store, sim.Model) {
	t.Helper()
	c, store, m, _ := faultSimulator(t, topo, specs...)
	return c, store, m
}

// faultSimulator is faultSim that also returns the simulator, for what is in flight.
func faultSimulator(t *testing.T, topo string, specs ...string) (*engine.Client, *timeline.Store, sim.Model, *sim.Sim) {
	t.Helper()
	tp, err := sim.TopologyByName(topo)
	if err != nil {
		t.Fatal(err)
	}
	var fs []fault.Fault
	for _, sp := range specs {
		f, err := fault.Parse(sp)
		if err != nil {
			t.Fatalf("%s: %v", sp, err)
		}
		fs = append(fs, f)
	}
	m := sim.ModelOf(tp)
	m.KernelJitter = 0
	store := timeline.NewStore(nil)
	s, err := sim.New(sim.Config{Topology: tp, Seed: 1, Model: m, Faults: fs}, store, store.Strings)
	if err != nil {
		t.Fatal(err)
	}
	return engine.NewClient(s, store, engine.DefaultOptions()), store, m, s
}

// sendTimes runs two concurrent sends of bytes between the hosts of h100x8x2, device 0 → 8 (host 0
// NIC 0 out, host 1 NIC 0 in) and 1 → 9 (NIC 1 of each), and returns each send's event.
func sendTimes(t *testing.T, bytes int64, specs ...string) (a, b timeline.Event, m sim.Model) {
	t.Helper()
	c, store, m := faultSim(t, "h100x8x2", specs...)
	for i, pair := range [][2]engine.DeviceID{{0, 8}, {1, 9}} {
		ss, _ := c.NewStream(pair[0], engine.PriorityNormal)
		rs, _ := c.NewStream(pair[1], engine.PriorityNormal)
		if _, err := c.Send(ss, pair[1], bytes, uint64(i+1)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Recv(rs, pair[0], bytes, uint64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	run(t, c)
	for _, e := range store.Events() {
		if e.Kind == timeline.KindSend && e.Device == 0 {
			a = e
		}
		if e.Kind == timeline.KindSend && e.Device == 1 {
			b = e
		}
	}
	return a, b, m
}

// A NIC at a quarter of its rate slows exactly the flow that crosses it, by the hand calculation:
// NCCL's flow moves its payload at cap = NIC × nic_efficiency alone; on a link at 0.25 of its line
// rate it still pays its protocol's overhead, so its payload moves at 0.25 × cap, and a send of B
// bytes takes 3·B/cap longer. The send beside it, over other NICs, takes what it does healthy.
func TestNICSlowSlowsExactlyItsFlows(t *testing.T) {
	const B = 1 << 30
	h0, h1, m := sendTimes(t, B)
	s0, s1, _ := sendTimes(t, B, "kind=nic_slow,host=0,nic=0,factor=0.25")
	capNs := m.NICBps * m.NCCLNICEff / 1e9 // payload bytes per ns, healthy
	want := 3 * float64(B) / capNs
	if got := float64(s0.Dur() - h0.Dur()); math.Abs(got-want) > 2 {
		t.Errorf("send across the slow NIC took %.0f ns longer; the hand calculation says %.0f", got, want)
	}
	if s1.Start != h1.Start || s1.End != h1.End {
		t.Errorf("send over healthy NICs changed: [%d, %d] healthy, [%d, %d] with the fault", h1.Start, h1.End, s1.Start, s1.End)
	}

	// Onset half-way through the healthy transfer: the first half moved at cap, the rest at cap/4,
	// so it ends 2.5 D after the flow began, D being the healthy transfer time.
	D := float64(B) / capNs
	flowStart := float64(h0.End) - D
	at := int64(flowStart + D/2)
	s0, _, _ = sendTimes(t, B, "kind=nic_slow,host=0,nic=0,factor=0.25,at="+nsDur(at))
	if want := flowStart + 2.5*D; math.Abs(float64(s0.End)-want) > 3 {
		t.Errorf("fault at half-way: send ended at %d; the hand calculation says %.0f", s0.End, want)
	}

	// A fault that ends: for the middle half of the healthy transfer time.
	s0, _, _ = sendTimes(t, B, "kind=nic_slow,host=0,nic=0,factor=0.25,at="+nsDur(at)+",for="+nsDur(int64(D/4)))
	// D/4 at cap/4 moves D/16 worth; the rest (D/2 − D/16) at cap.
	if want := flowStart + D/2 + D/4 + (D/2 - D/16); math.Abs(float64(s0.End)-want) > 3 {
		t.Errorf("fault for D/4: send ended at %d; the hand calculation says %.0f", s0.End, want)
	}
}

func nsDur(ns int64) string { return time.Duration(ns).String() }

// A flapping NIC (down half of each period) stalls its flows while down: the send takes about
// twice as long; the other send does not change.
func TestNICFlapStallsWhileDown(t *testing.T) {
	const B = 1 << 30
	h0, h1, _ := sendTimes(t, B)
	s0, s1, _ := sendTimes(t, B, "kind=nic_flap,host=1,nic=0,period=2ms")
	if r := float64(s0.Dur()) / float64(h0.Dur()); r < 1.9 || r > 2.1 {
		t.Errorf("send across a NIC down half the time took %.2f× healthy; want ~2×", r)
	}
	if s1.End != h1.End {
		t.Errorf("send over healthy NICs changed: ended %d healthy, %d with the flap", h1.End, s1.End)
	}
}

// kernelEnds runs one 1 ms kernel on devices 2 and 3 of h100x8 after a 1 ms one, and returns the
// durations of the second kernels.
func kernelDurs(t *testing.T, specs ...string) (d2, d3 int64) {
	c, store, _ := faultSim(t, "h100x8", specs...)
	for _, d := range []engine.DeviceID{2, 3} {
		s, _ := c.NewStream(d, engine.PriorityNormal)
		_ = c.Kernel(s, 1_000_000, "a")
		_ = c.Kernel(s, 1_000_000, "b")
	}
	run(t, c)
	for _, e := range store.Events() {
		if e.Kind == timeline.KindKernel && store.Strings.Lookup(e.Label) == "b" {
			if e.Device == 2 {
				d2 = e.Dur()
			} else {
				d3 = e.Dur()
			}
		}
	}
	return d2, d3
}

// A GPU throttled to half speed from 0.5 ms on runs its kernels started after then twice as long;
// the others do not change.
func TestGPUSlowScalesKernels(t *testing.T) {
	d2, d3 := kernelDurs(t, "kind=gpu_slow,host=0,gpu=3,factor=0.5,at=500us")
	if d2 != 1_000_000 || d3 != 2_000_000 {
		t.Errorf("kernel durations: device 2 %d ns (want 1 ms), device 3 %d ns (want 2 ms)", d2, d3)
	}
}

// A slow host pays its delay on every launch: its tenth kernel is queued ten delays later than the
// healthy host's.
func TestHostSlowDelaysLaunches(t *testing.T) {
	c, store, _ := faultSim(t, "h100x8x2", "kind=host_slow,host=1,delay=40us")
	for _, d := range []engine.DeviceID{0, 8} {
		s, _ := c.NewStream(d, engine.PriorityNormal)
		for range 10 {
			_ = c.Kernel(s, 1000, "k")
		}
	}
	run(t, c)
	var last [2]int64
	for _, e := range store.Events() {
		if e.Kind == timeline.KindKernel {
			last[e.Device/8] = max(last[e.Device/8], e.Queued)
		}
	}
	if got := last[1] - last[0]; got != 10*40_000 {
		t.Errorf("the slow host queued its tenth kernel %d ns after the healthy one; want 10 × 40 µs", got)
	}
}

// PCIe trained down a generation halves a large host-to-device copy's rate on that GPU only.
func TestPCIeGenHalvesCopies(t *testing.T) {
	dur := func(specs ...string) (a, b int64) {
		c, store, _ := faultSim(t, "h100x8", specs...)
		for _, d := range []engine.DeviceID{0, 1} {
			s, _ := c.NewStream(d, engine.PriorityNormal)
			_, _ = c.Copy(s, timeline.CopyH2D, 1<<30, -1, false)
		}
		run(t, c)
		for _, e := range store.Events() {
			if e.Kind == timeline.KindMemcpy && e.Device == 0 {
				a = e.Dur()
			} else if e.Kind == timeline.KindMemcpy {
				b = e.Dur()
			}
		}
		return a, b
	}
	h0, h1 := dur()
	f0, f1 := dur("kind=pcie_gen,host=0,gpu=1")
	if r := float64(f1) / float64(h1); r < 1.98 || r > 2.02 || f0 != h0 {
		t.Errorf("copy on the GPU at half PCIe took %.3f× healthy (want 2×); the other %d ns vs %d healthy", r, f0, h0)
	}
}

// A hung rank never posts its collective and a missing rank never joins the communicator: the
// others wait, and the watchdog names exactly that rank as never arriving.
func TestHangAndMissingRank(t *testing.T) {
	for _, spec := range []string{"kind=hang,host=0,gpu=3,coll=all_reduce", "kind=missing_rank,rank=3"} {
		c, _, _ := faultSim(t, "h100x8", spec)
		devs := []engine.DeviceID{0, 1, 2, 3, 4, 5, 6, 7}
		if _, err := c.Collective(timeline.CollAllReduce, devs, 1<<20, "ar"); err != nil {
			t.Fatal(err)
		}
		err := c.Run(context.Background())
		var wd *engine.WatchdogError
		if !errors.As(err, &wd) || len(wd.Missing) != 1 || wd.Missing[0] != 3 {
			t.Errorf("%s: run ended with %v; want the watchdog naming rank 3 missing", spec, err)
		}
	}
	// A hang that names another collective lets this one through.
	c, _, _ := faultSim(t, "h100x8", "kind=hang,rank=3,coll=all_gather")
	if _, err := c.Collective(timeline.CollAllReduce, []engine.DeviceID{0, 1, 2, 3}, 1<<20, "ar"); err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background()); err != nil {
		t.Errorf("a hang at all_gather stopped an all_reduce: %v", err)
	}
}

// A rank hung in a collective (mode=in) posts it, so no rank waits for it to enter; the collective
// starts and never completes on any rank: nothing the watchdog guards (a wait for a peer) is
// under way, so the run ends as a deadlock, with every rank's part of it still running and the
// collective queued behind it never started. Before it (the default), the same fault leaves
// every other rank waiting for rank 3.
func TestHangInCollective(t *testing.T) {
	for _, c := range []struct {
		spec       string
		running    int // the all-reduce's parts in flight at the end
		peerWaits  int
		wantWdRank bool
	}{
		{spec: "kind=hang,rank=3,coll=all_reduce,mode=in", running: 8},
		{spec: "kind=hang,rank=3,coll=all_reduce", peerWaits: 0, wantWdRank: true},
	} {
		cl, store, _, s := faultSimulator(t, "h100x8", c.spec)
		devs := []engine.DeviceID{0, 1, 2, 3, 4, 5, 6, 7}
		for _, coll := range []timeline.CollOp{timeline.CollAllReduce, timeline.CollAllGather} {
			if _, err := cl.Collective(coll, devs, 1<<20, "c"); err != nil {
				t.Fatal(err)
			}
		}
		err := cl.Run(context.Background())
		var wd *engine.WatchdogError
		var dl *engine.DeadlockError
		if c.wantWdRank {
			if !errors.As(err, &wd) || len(wd.Missing) != 1 || wd.Missing[0] != 3 {
				t.Errorf("%s: run ended with %v; want the watchdog naming rank 3 missing", c.spec, err)
			}
			continue
		}
		if !errors.As(err, &dl) {
			t.Fatalf("%s: run ended with %v; want a deadlock (nothing can move)", c.spec, err)
		}
		running, waits := 0, 0
		for _, e := range s.InFlight(nil) {
			switch {
			case e.Kind == timeline.KindCollective && timeline.CollOp(e.Sub) == timeline.CollAllReduce:
				running++
				// The hung rank's part made no progress; its peers' parts run, waiting on it.
				if want := map[bool]uint8{true: timeline.StatusStalled, false: timeline.StatusOK}[e.Device == 3]; e.Status != want {
					t.Errorf("%s: device %d's part in flight has status %d; want %d", c.spec, e.Device, e.Status, want)
				}
			case e.Kind == timeline.KindPeerWait:
				waits++
			}
		}
		if running != c.running || waits != c.peerWaits {
			t.Errorf("%s: %d all-reduce parts and %d peer waits in flight; want %d and %d", c.spec, running, waits, c.running, c.peerWaits)
		}
		for _, e := range store.Events() {
			if e.Kind == timeline.KindCollective {
				t.Errorf("%s: a collective completed (%v on device %d); want none", c.spec, timeline.CollOp(e.Sub), e.Device)
			}
		}
	}
}

// A hang applies to sends and receives: a rank that only sends and receives hangs at its next
// one by default (it has posted no collective), and coll=send, recv, send_recv and any name them;
// a rank that has posted a collective keeps hanging at its next collective by default, so its
// sends go through. Rank 1 receives from rank 0 and sends to rank 2 (a pipeline stage).
func TestHangAtSendRecv(t *testing.T) {
	for _, c := range []struct {
		spec     string
		collPrev bool // rank 1 runs an all-reduce with rank 3 first
		wdRank   int  // the rank the watchdog names missing; -1: the run ends without an alert
		deadlock bool // the run ends as a deadlock (mode=in: no rank waits for a peer)
	}{
		{spec: "kind=hang,rank=1", wdRank: 1},
		{spec: "kind=hang,rank=1,coll=recv", wdRank: 1},
		{spec: "kind=hang,rank=1,coll=send", wdRank: 1},
		{spec: "kind=hang,rank=1,coll=send_recv", wdRank: 1},
		{spec: "kind=hang,rank=1,coll=any", wdRank: 1},
		// In its receive from rank 0: its send, queued behind it, is never posted.
		{spec: "kind=hang,rank=1,mode=in", wdRank: 1},
		// In its send to rank 2: both halves posted, neither completes: nothing waits for a peer.
		{spec: "kind=hang,rank=1,coll=send,mode=in", deadlock: true, wdRank: -1},
		{spec: "kind=hang,rank=1,coll=all_gather", wdRank: -1},
		{spec: "kind=hang,rank=1,at=1s", collPrev: true, wdRank: -1},
	} {
		cl, store, _, _ := faultSimulator(t, "h100x8", c.spec)
		if c.collPrev {
			if _, err := cl.Collective(timeline.CollAllReduce, []engine.DeviceID{1, 3}, 1<<20, "ar"); err != nil {
				t.Fatal(err)
			}
		}
		var st [3]engine.StreamID
		for d := range st {
			st[d], _ = cl.NewStream(engine.DeviceID(d), engine.PriorityNormal)
		}
		for _, p := range []struct {
			dev, peer engine.DeviceID
			send      bool
			id        uint64
		}{{0, 1, true, 1}, {1, 0, false, 1}, {1, 2, true, 2}, {2, 1, false, 2}} {
			var err error
			if p.send {
				_, err = cl.Send(st[p.dev], p.peer, 1<<20, p.id)
			} else {
				_, err = cl.Recv(st[p.dev], p.peer, 1<<20, p.id)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		err := cl.Run(context.Background())
		var wd *engine.WatchdogError
		var dl *engine.DeadlockError
		switch {
		case c.wdRank >= 0:
			if !errors.As(err, &wd) || int(wd.Peer) != c.wdRank {
				t.Errorf("%s: run ended with %v; want the watchdog naming rank %d as never posting its half", c.spec, err, c.wdRank)
			}
		case c.deadlock:
			if !errors.As(err, &dl) {
				t.Errorf("%s: run ended with %v; want a deadlock (its transfer never moves)", c.spec, err)
			}
			for _, e := range store.Events() {
				if e.Kind == timeline.KindSend && e.Device == 1 {
					t.Errorf("%s: rank 1's send completed; want it stuck", c.spec)
				}
			}
		default:
			if err != nil {
				t.Errorf("%s: the sends stopped: %v; want them through", c.spec, err)
			}
		}
	}
}

// Faults out of the topology's range are refused when the simulator is built.
func TestFaultOutOfRange(t *testing.T) {
	tp, _ := sim.TopologyByName("h100x8x2")
	for _, spec := range []string{"kind=nic_slow,host=2,nic=0,factor=0.5", "kind=gpu_slow,host=0,gpu=8,factor=0.5", "kind=hang,rank=16"} {
		f, err := fault.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sim.New(sim.Config{Topology: tp, Faults: []fault.Fault{f}}, timeline.NewStore(nil), nil); err == nil {
			t.Errorf("%s: accepted on %s", spec, tp.Name)
		}
	}
}

// linkBusy sums the link bytes events of one device's link (class, direction): bytes and busy ns.
func linkBusy(store *timeline.Store, dev int32, link, dir int) (bytes, busy float64) {
	for _, e := range store.Events() {
		if e.Kind == timeline.KindLinkBytes && e.Device == dev && e.Sub == timeline.PackLink(link, dir) {
			bytes += float64(e.Bytes)
			busy += float64(e.Op)
		}
	}
	return bytes, busy
}

// A link's busy time follows the hand calculation. One send of B bytes from device 0 (host 0 NIC
// 0) to device 8 (host 1 NIC 0) moves its payload at cap = NIC × nic_efficiency on a wire at the
// line rate: healthy, both NICs are busy D = B/cap. With host 0's NIC at 0.25 the flow's wire
// rate is a quarter of the line: NIC 0 out is busy all of the 4D the send takes, and host 1's
// NIC 0 in, at a quarter of its line rate, a quarter of it (D). Both carried B, so the slow
// link's rate while busy is 25% of its peer's, though their bytes per window are the same.
func TestLinkBusyTime(t *testing.T) {
	const B = 1 << 30
	for _, tc := range []struct {
		name           string
		spec           []string
		outBusy, inBus float64 // in units of D
	}{
		{"healthy", nil, 1, 1},
		{"nic_slow 0.25", []string{"kind=nic_slow,host=0,nic=0,factor=0.25"}, 4, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, store, m := faultSim(t, "h100x8x2", tc.spec...)
			ss, _ := c.NewStream(0, engine.PriorityNormal)
			rs, _ := c.NewStream(8, engine.PriorityNormal)
			if _, err := c.Send(ss, 8, B, 1); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Recv(rs, 0, B, 1); err != nil {
				t.Fatal(err)
			}
			run(t, c)
			D := float64(B) / (m.NICBps * m.NCCLNICEff / 1e9)
			for _, l := range []struct {
				dev  int32
				dir  int
				want float64
			}{{0, timeline.LinkTx, tc.outBusy * D}, {8, timeline.LinkRx, tc.inBus * D}} {
				bytes, busy := linkBusy(store, l.dev, timeline.PeakNIC, l.dir)
				if math.Abs(bytes-B) > 1e-6*B {
					t.Errorf("device %d NIC dir %d carried %.0f bytes; want %d", l.dev, l.dir, bytes, B)
				}
				// Each window's busy time is rounded to the ns: a few windows, a few ns.
				if math.Abs(busy-l.want) > 1e-6*l.want+10 {
					t.Errorf("device %d NIC dir %d busy %.0f ns; the hand calculation says %.0f", l.dev, l.dir, busy, l.want)
				}
			}
		})
	}
}

// A flapping NIC at 0 is busy while down as well (its flows wait on it) but moves nothing then:
// its rate while busy is about half its peer's, whose flow simply stops.
func TestLinkBusyWhileDown(t *testing.T) {
	const B = 1 << 30
	c, store, _ := faultSim(t, "h100x8x2", "kind=nic_flap,host=1,nic=0,period=2ms")
	ss, _ := c.NewStream(0, engine.PriorityNormal)
	rs, _ := c.NewStream(8, engine.PriorityNormal)
	if _, err := c.Send(ss, 8, B, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Recv(rs, 0, B, 1); err != nil {
		t.Fatal(err)
	}
	run(t, c)
	ob, obusy := linkBusy(store, 0, timeline.PeakNIC, timeline.LinkTx)
	ib, ibusy := linkBusy(store, 8, timeline.PeakNIC, timeline.LinkRx)
	if r := (ib / ibusy) / (ob / obusy); r < 0.45 || r > 0.55 {
		t.Errorf("flapping NIC's rate while busy is %.2f of its peer's; want about 0.5", r)
	}
}

// A leaf's ports to the spines at a quarter of their rate slow exactly the flows between rail
// groups that cross them. Four hosts, two per rail group at 1:1: a leaf's uplink is 2 NICs' line
// rate, so at 0.25 it is half a NIC's, and a send from host 0 to host 2 on rail 0 (leaf g0.r0 up,
// g1.r0 down) moves its wire bytes at half the line rate: 2D where it took D. The same send on
// rail 1 does not change, and the slow uplink is busy all of the 2D while the NIC beside it is busy
// half of it.
func TestFabricSlowSlowsExactlyItsFlows(t *testing.T) {
	const B = 1 << 30
	tp := fabricTopo(t, 4, "fabric:\n  kind: rail\n  switch_radix: 4\n  hosts_per_leaf: 2\n")
	sends := func(specs ...string) (a, b timeline.Event, store *timeline.Store, m sim.Model) {
		var fs []fault.Fault
		for _, sp := range specs {
			f, err := fault.Parse(sp)
			if err != nil {
				t.Fatal(err)
			}
			fs = append(fs, f)
		}
		m = sim.ModelOf(tp)
		m.KernelJitter = 0
		store = timeline.NewStore(nil)
		s, err := sim.New(sim.Config{Topology: tp, Seed: 1, Model: m, Faults: fs}, store, store.Strings)
		if err != nil {
			t.Fatal(err)
		}
		c := engine.NewClient(s, store, engine.DefaultOptions())
		for i, pair := range [][2]engine.DeviceID{{0, 16}, {1, 17}} {
			ss, _ := c.NewStream(pair[0], engine.PriorityNormal)
			rs, _ := c.NewStream(pair[1], engine.PriorityNormal)
			if _, err := c.Send(ss, pair[1], B, uint64(i+1)); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Recv(rs, pair[0], B, uint64(i+1)); err != nil {
				t.Fatal(err)
			}
		}
		run(t, c)
		for _, e := range store.Events() {
			if e.Kind == timeline.KindSend && e.Device == 0 {
				a = e
			}
			if e.Kind == timeline.KindSend && e.Device == 1 {
				b = e
			}
		}
		return a, b, store, m
	}
	h0, h1, _, m := sends()
	s0, s1, store, _ := sends("kind=fabric_slow,group=0,rail=0,factor=0.25")
	D := float64(B) / (m.NICBps * m.NCCLNICEff / 1e9)
	if got := float64(s0.Dur() - h0.Dur()); math.Abs(got-D) > 3 {
		t.Errorf("send across the slow leaf took %.0f ns longer; the hand calculation says %.0f", got, D)
	}
	if s1.Start != h1.Start || s1.End != h1.End {
		t.Errorf("send over a healthy leaf changed: [%d, %d] healthy, [%d, %d] with the fault", h1.Start, h1.End, s1.Start, s1.End)
	}
	var upBusy float64
	for _, e := range store.Events() {
		if dir, ok := timeline.UnpackFabricLink(e.Sub); ok && e.Kind == timeline.KindLinkBytes && dir == timeline.LinkTx && e.Aux == timeline.PackPort(0, 0) {
			upBusy += float64(e.Op)
		}
	}
	if math.Abs(upBusy-2*D) > 1e-6*D+10 {
		t.Errorf("slow uplink busy %.0f ns; the hand calculation says %.0f", upBusy, 2*D)
	}
	if _, nicBusy := linkBusy(store, 0, timeline.PeakNIC, timeline.LinkTx); math.Abs(nicBusy-D) > 1e-6*D+10 {
		t.Errorf("its NIC busy %.0f ns; the hand calculation says %.0f", nicBusy, D)
	}
}
