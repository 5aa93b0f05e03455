package whatif

import (
	"fmt"

	"github.com/xfertop/xfertop/depgraph"
	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/timeline"
)

// Why a send and its receive keep their measured time.
const (
	p2pNoSize     = "sends and receives: the trace does not record their size or peer"
	p2pNoTopology = "sends and receives: no topology to model them on: give --topology"
	p2pUntouched  = "sends and receives: the change does not touch their path"
	p2pDown       = "sends and receives: a fault takes a link of their path down for the rest of the run"
)

// retimeP2P times each send and its receive (a matched instance) on the path between their two
// GPUs, with the engine's model of a lone send (sim.PredictP2P: latency, and the rate NCCL
// reaches on NVLink within a node, on the NICs and fabric across): where the trace's own
// topology is known, only a pair whose path the change touches (the model times it otherwise on
// o.Topology than on o.Recorded) is re-timed, its measured transfer (its time less the old
// path's latency) taken at the new rate over the old, plus the new path's latency, so that the
// link sharing the measurement holds scales with the link; the others keep their measured time,
// which the model of a lone send would not reproduce where sends share links. Where it is not
// known (an imported trace) the model times the pair alone on o.Topology, as collectives are.
func (r *Result) retimeP2P(g *depgraph.Graph, o Options, inst map[int32]int, w *window) error {
	type timed struct {
		ns    int64
		ratio float64 // the new path's time for the bytes over the old's (ns < 0)
		why   string
	}
	seen := map[int32]timed{}
	type pair struct{ src, dst engine.DeviceID }
	cache := map[pair][2]sim.P2PPrediction{}
	for i, e := range g.Edges {
		// The join's edges to the parts' ends, not to the ends of the peer waits before them.
		if e.Kind != depgraph.EdgeSendRecv || g.NodeOf(e.From) >= 0 || g.NodeOf(e.To) < 0 || !isP2P(g.Event(g.NodeOf(e.To)).Kind) {
			continue
		}
		in := &g.Instances[inst[e.From]]
		t, ok := seen[e.From]
		if !ok {
			src, dst, bytes := p2pPeers(g, in)
			switch {
			case bytes <= 0 || src < 0 || dst < 0:
				t.why = p2pNoSize
			case o.Topology.Hosts == 0:
				t.why = p2pNoTopology
			default:
				for _, d := range []engine.DeviceID{src, dst} {
					if !o.Topology.Valid(d) || o.Recorded.Hosts > 0 && !o.Recorded.Valid(d) {
						return fmt.Errorf("--topology %s has %d devices; the trace's sends use device %d", o.Topology.Name, o.Topology.Devices(), d)
					}
				}
				k := pair{src, dst}
				p, ok := cache[k]
				if !ok {
					p[1] = sim.PredictP2P(sim.ModelOf(o.Topology), o.Topology, src, dst)
					if o.Recorded.Hosts > 0 {
						p[0] = sim.PredictP2P(sim.ModelOf(o.Recorded), o.Recorded, src, dst)
					}
					cache[k] = p
				}
				at := p2pStart(g, in)
				x0, hit0, _ := o.RecordedFaults.P2P(src, dst, bytes, at)
				x1, hit1, ends := o.Faults.P2P(src, dst, bytes, at)
				switch {
				case hit1 && !ends:
					t.why = p2pDown
				case o.Recorded.Hosts == 0:
					t.ns = int64(p[1].TimeNs(bytes)) + x1
				case p[0] == p[1] && x0 == x1:
					t.why = p2pUntouched
				default:
					// The measured transfer at the new path's time for its bytes over the old's,
					// faults included: a send on a healed link sheds the fault's share.
					t.ns, t.ratio = -1, (float64(bytes)/p[1].Bps*1e9+float64(x1))/(float64(bytes)/p[0].Bps*1e9+float64(x0))
				}
				if (hit0 || hit1) && t.why == "" && w.counts(e.From) {
					r.FaultedP2P++
				}
			}
			seen[e.From] = t
			if w.counts(e.From) {
				if t.why != "" {
					r.Kept[t.why]++
				} else {
					r.RetimedP2P++
				}
			}
		}
		switch {
		case t.why != "":
		case t.ns >= 0:
			r.Weight[i] = t.ns
		default:
			src, dst, _ := p2pPeers(g, in)
			p := cache[pair{src, dst}]
			moved := float64(max(0, e.W-p[0].LatencyNs)) * t.ratio
			r.Weight[i] = p[1].LatencyNs + int64(moved)
		}
	}
	return nil
}

// p2pPeers are the sending and the receiving device of a send instance and its bytes (-1 where
// the trace does not say).
func p2pPeers(g *depgraph.Graph, in *depgraph.Instance) (src, dst engine.DeviceID, bytes int64) {
	src, dst = -1, -1
	for _, n := range in.Parts {
		e := g.Event(n)
		bytes = max(bytes, e.Bytes)
		switch e.Kind {
		case timeline.KindSend:
			src = engine.DeviceID(e.Device)
			if e.Peer != timeline.NoDevice {
				dst = engine.DeviceID(e.Peer)
			}
		case timeline.KindRecv:
			dst = engine.DeviceID(e.Device)
			if src < 0 && e.Peer != timeline.NoDevice {
				src = engine.DeviceID(e.Peer)
			}
		}
	}
	return src, dst, bytes
}

func isP2P(k timeline.Kind) bool { return k == timeline.KindSend || k == timeline.KindRecv }

// p2pStart is when a send instance's transfer began as measured: as the later of its two halves
// was posted.
func p2pStart(g *depgraph.Graph, in *depgraph.Instance) int64 {
	var at int64
	for _, n := range in.Parts {
		at = max(at, g.Event(n).Start)
	}
	return at
}
