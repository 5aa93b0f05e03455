package sim_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/timeline"
)

// eventLog keeps every event, in order.
type eventLog struct{ events []timeline.Event }

func (l *eventLog) Emit(e *timeline.Event) { l.events = append(l.events, *e) }

// runRings runs ring collectives across hosts × 8 H100 with other traffic on their links, the
// merge of identical ring edges on or off, and returns the events and the most flows at once.
// A ring all-reduce over GPUs 0-5 of every host (six rings, five of each host's six edges inside it
// the same GPU pair in each ring); beside it on host 0, series of peer copies of assorted sizes
// starting and ending while it runs (the links' lists of flows churn): into GPU 1 from four GPUs,
// so that the ring's edge 0→1 gets less than its cap there, and from GPU 0 to GPU 6, outside the
// ring, which gets what the ring's flows leave of GPU 0's NVLink; an all-reduce inside host 1
// (one ring on the same NVLinks), a reduce-scatter over two GPUs of each host (two rings), and
// sends between the last two hosts over the NICs; a slow NIC re-solves the rings' rates mid-run.
func runRings(t *testing.T, hosts int, merge bool) ([]timeline.Event, int) {
	t.Helper()
	topo, err := sim.TopologyByName("h100x8x2")
	if err != nil {
		t.Fatal(err)
	}
	topo.Hosts = hosts
	m := sim.ModelOf(topo)
	m.KernelJitter = 0
	log := &eventLog{}
	slow := fault.Fault{Kind: fault.NICSlow, Host: 1, NIC: 3, Factor: 0.3, At: 960_500_000, For: 600_000}
	s, err := sim.New(sim.Config{Topology: topo, Seed: 1, Model: m, Faults: []fault.Fault{slow}}, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	sim.SetMergeEdges(s, merge)
	opts := engine.DefaultOptions()
	opts.NCCLAlgo = timeline.AlgoRing
	c := engine.NewClient(s, log, opts)
	all := topo.AllDevices()
	host1 := all[8:16]
	var pairs []engine.DeviceID
	for h := range hosts {
		pairs = append(pairs, engine.DeviceID(8*h+2), engine.DeviceID(8*h+5))
	}
	var ring []engine.DeviceID
	for _, d := range all {
		if d%8 < 6 {
			ring = append(ring, d)
		}
	}
	warm(t, c, ring, host1, pairs) // so that everything below starts together
	if _, err := c.Collective(timeline.CollAllReduce, ring, 256<<20, "ring"); err != nil {
		t.Fatal(err)
	}
	for i, p := range [][2]engine.DeviceID{{2, 1}, {3, 1}, {4, 1}, {7, 1}, {0, 6}, {1, 2}, {5, 0}} {
		for k, mib := range []int64{1, 3, 7, 2, 5} {
			st, err := c.NewStream(p[0], engine.Priority(0))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Kernel(st, int64(k*200_000+i*10_000), "wait"); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Copy(st, timeline.CopyP2P, mib<<20, p[1], false); err != nil {
				t.Fatal(err)
			}
		}
	}
	streams := make([]engine.StreamID, len(host1))
	for i, d := range host1 {
		if streams[i], err = c.NewStream(d, engine.Priority(0)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.CollectiveOn(timeline.CollAllReduce, host1, streams, 16<<20, "host1"); err != nil {
		t.Fatal(err)
	}
	pstreams := make([]engine.StreamID, len(pairs))
	for i, d := range pairs {
		if pstreams[i], err = c.NewStream(d, engine.Priority(0)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.CollectiveOn(timeline.CollReduceScatter, pairs, pstreams, 32<<20, "pairs"); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		src, dst := engine.DeviceID(8*(hosts-2)+i), engine.DeviceID(8*(hosts-1)+i)
		ss, err := c.NewStream(src, engine.Priority(0))
		if err != nil {
			t.Fatal(err)
		}
		rs, err := c.NewStream(dst, engine.Priority(0))
		if err != nil {
			t.Fatal(err)
		}
		id := c.NewOpID()
		if _, err := c.Send(ss, dst, int64(i+1)<<22, id); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Recv(rs, src, int64(i+1)<<22, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return log.events, sim.FlowSlots(s)
}

// A collective's rings walk each node's GPUs in one order, so most of their edges inside a node
// are the same pair of GPUs; the simulator keeps one flow for such a pair instead of one per ring.
// That must change nothing but the work: the same events, field for field and in the same order,
// with other flows sharing those links and a slow NIC changing the rates mid-run.
func TestRingEdgesMergedChangeNothing(t *testing.T) {
	for _, hosts := range []int{2, 4} {
		t.Run(fmt.Sprintf("%d hosts", hosts), func(t *testing.T) {
			merged, nm := runRings(t, hosts, true)
			apart, na := runRings(t, hosts, false)
			if len(merged) != len(apart) {
				t.Fatalf("%d events merged, %d apart", len(merged), len(apart))
			}
			for i := range merged {
				if merged[i] != apart[i] {
					t.Fatalf("event %d: merged %+v; apart %+v", i, merged[i], apart[i])
				}
			}
			// The ring all-reduce alone has 6 rings of 6·hosts edges, 5 of each host's 6 edges in
			// a ring inside it: 6·hosts flows for those 30·hosts edges when merged.
			if nm > na-24*hosts {
				t.Errorf("%d flows at most merged, %d apart; want 24 per host fewer", nm, na)
			}
			t.Logf("%d events; %d flows at most merged, %d apart", len(merged), nm, na)
		})
	}
}

// Completions that leave every link they touched without flows have nothing to share out: the
// solve after them only banks the links' bytes. A ring all-reduce alone on two hosts fills its
// links once, when it starts (its flows' ends were a second solve, of no flows), and its links
// still report what they carried.
func TestEndedFlowsAreNotResolved(t *testing.T) {
	topo, err := sim.TopologyByName("h100x8x2")
	if err != nil {
		t.Fatal(err)
	}
	log := &eventLog{}
	s, err := sim.New(sim.Config{Topology: topo, Seed: 1, Model: sim.ModelOf(topo)}, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := engine.DefaultOptions()
	opts.NCCLAlgo = timeline.AlgoRing
	c := engine.NewClient(s, log, opts)
	all := topo.AllDevices()
	warm(t, c, all)
	before := sim.Solves(s)
	if _, err := c.Collective(timeline.CollAllReduce, all, 64<<20, "alone"); err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := sim.Solves(s) - before; got != 1 {
		t.Errorf("%d solves with flows for one collective alone; want 1", got)
	}
	var nvlink, nic int64
	for _, e := range log.events {
		if link, _, ok := timeline.UnpackLink(e.Sub); ok && e.Kind == timeline.KindLinkBytes {
			switch link {
			case timeline.PeakNVLink:
				nvlink += e.Bytes
			case timeline.PeakNIC:
				nic += e.Bytes
			}
		}
	}
	if nvlink == 0 || nic == 0 {
		t.Errorf("links reported %d bytes on NVLink, %d on NICs; want both", nvlink, nic)
	}
}
