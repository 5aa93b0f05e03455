package sim_test

import (
	"math"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/timeline"
)

// LinkFaults times a collective or a send alone on a machine with link faults as the simulator
// runs it: a lone collective (ring across hosts, NVLS-tree, a ring inside a host through a slow
// NVLink port) or send, in a simulator with the fault, takes PredictNCCL's (PredictP2P's) time
// plus the extra LinkFaults gives, within 2%; a collective that crosses no faulted link gets none.
func TestLinkFaultsMatchALoneCollective(t *testing.T) {
	tp, err := sim.TopologyByName("h100x8x2")
	if err != nil {
		t.Fatal(err)
	}
	all := tp.AllDevices()
	host0 := all[:8]
	parse := func(s string) fault.Fault {
		f, err := fault.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, tc := range []struct {
		name    string
		fault   string
		algo    timeline.NCCLAlgo
		op      timeline.CollOp
		ranks   []engine.DeviceID
		send    bool // a send from ranks[0] to ranks[1] instead
		touched bool
	}{
		{"ring all-reduce across hosts, a NIC at 0.3", "kind=nic_slow,host=1,nic=0,factor=0.3", timeline.AlgoRing, timeline.CollAllReduce, all, false, true},
		{"all-gather across hosts, a NIC at 0.5", "kind=nic_slow,host=0,nic=1,factor=0.5", timeline.AlgoRing, timeline.CollAllGather, all, false, true},
		{"NVLS-tree all-reduce, a NIC at 0.3", "kind=nic_slow,host=1,nic=0,factor=0.3", timeline.AlgoNVLSTree, timeline.CollAllReduce, all, false, true},
		{"ring inside a host, an NVLink port at 0.5", "kind=nvlink_slow,host=0,gpu=2,factor=0.5", timeline.AlgoRing, timeline.CollAllReduce, host0, false, true},
		{"inside a host, the other host's NIC slow", "kind=nic_slow,host=1,nic=0,factor=0.3", timeline.AlgoRing, timeline.CollAllReduce, host0, false, false},
		{"send across hosts, a NIC at 0.25", "kind=nic_slow,host=1,nic=1,factor=0.25", 0, 0, []engine.DeviceID{1, 9}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := parse(tc.fault)
			m := sim.ModelOf(tp)
			m.KernelJitter = 0
			store := timeline.NewStore(nil)
			s, err := sim.New(sim.Config{Topology: tp, Seed: 1, Model: m, Faults: []fault.Fault{f}}, store, store.Strings)
			if err != nil {
				t.Fatal(err)
			}
			c := engine.NewClient(s, store, engine.Options{NCCLAlgo: tc.algo})
			const bytes = 256 << 20
			kind := timeline.KindCollective
			if tc.send {
				kind = timeline.KindSend
				warm(t, c, tc.ranks)
				id := c.NewOpID()
				if _, err := c.Send(c.TransferStream(tc.ranks[0]), tc.ranks[1], bytes, id); err != nil {
					t.Fatal(err)
				}
				if _, err := c.Recv(c.TransferStream(tc.ranks[1]), tc.ranks[0], bytes, id); err != nil {
					t.Fatal(err)
				}
			} else {
				warm(t, c, tc.ranks)
				if _, err := c.Collective(tc.op, tc.ranks, bytes, "x"); err != nil {
					t.Fatal(err)
				}
			}
			run(t, c)
			ev := lastOf(store.Events(), kind)
			lf, err := sim.NewLinkFaults(m, tp, []fault.Fault{f})
			if err != nil {
				t.Fatal(err)
			}
			var healthy float64
			var extra int64
			var touched, ends bool
			if tc.send {
				healthy = sim.PredictP2P(m, tp, tc.ranks[0], tc.ranks[1]).TimeNs(bytes)
				extra, touched, ends = lf.P2P(tc.ranks[0], tc.ranks[1], bytes, ev.Start)
			} else {
				p := sim.PredictNCCL(m, tp, tc.op, tc.ranks, bytes, tc.algo, 0)
				healthy = p.TimeNs(bytes)
				extra, touched, ends = lf.Collective(tc.op, tc.ranks, bytes, p, ev.Start)
			}
			if touched != tc.touched || !ends {
				t.Fatalf("LinkFaults says touched %v, ends %v; want touched %v, ends", touched, ends, tc.touched)
			}
			if tc.touched && extra < int64(healthy/10) {
				t.Errorf("LinkFaults gives %s %.3f ms more than its healthy %.3f ms: this case needs a fault that costs it", kind, float64(extra)/1e6, healthy/1e6)
			}
			got, want := float64(ev.Dur()), healthy+float64(extra)
			if math.Abs(got-want) > 0.02*want {
				t.Errorf("%s took %.3f ms in the simulator with %s; predicted %.3f ms (%.3f healthy + %.3f the fault's)", kind, got/1e6, tc.fault, want/1e6, healthy/1e6, float64(extra)/1e6)
			}
		})
	}
}
