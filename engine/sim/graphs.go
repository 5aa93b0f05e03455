package sim

import (
	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/timeline"
)

// ---- CUDA graphs: a captured region replayed with one launch ----

// graphLaunchCost is the host cost of launching a captured graph: one cudaGraphLaunch, whatever
// its node count (the topology's host.graph_launch; a topology without it pays one kernel launch).
func (s *Sim) graphLaunchCost() int64 {
	if s.m.GraphLaunchNs > 0 {
		return s.m.GraphLaunchNs
	}
	return s.m.HostLaunchNs
}

// startGraphLaunch makes host h busy with the launch of cmd's graph.
func (s *Sim) startGraphLaunch(hi int32, cmd hostCmd) {
	h := &s.hosts[hi]
	h.cur, h.busy, h.since = cmd, true, s.now
	s.at(s.now+s.graphLaunchCost(), evHostDone, hi, 0)
}

// graphLaunched reports the launch that just ended on host h and puts every op of its graph on
// its stream at once: their order on each stream and the events between them are as captured.
func (s *Sim) graphLaunched(h *host, cmd *hostCmd) {
	ops := s.graphs[cmd.ref]
	s.graphs[cmd.ref] = nil
	s.freeGraphs = append(s.freeGraphs, cmd.ref)
	id := uint32(0)
	if len(ops) > 0 {
		id = ops[0].Graph
	}
	s.emit(engine.GraphLaunchEvent(h.dev, s.hostOf(h.dev), h.since, s.now, len(ops), id, cmd.Label))
	for i := range ops {
		s.enqueue(s.reserve(&ops[i]))
	}
}

// keepGraph keeps a graph launch's ops, in the order they were captured, until the launch ends
// (graphLaunched), and returns where: a host command holds no pointer (hostCmd).
func (s *Sim) keepGraph(ops []engine.StreamOp) int32 {
	if n := len(s.freeGraphs); n > 0 {
		gi := s.freeGraphs[n-1]
		s.freeGraphs = s.freeGraphs[:n-1]
		s.graphs[gi] = ops
		return gi
	}
	s.graphs = append(s.graphs, ops)
	return int32(len(s.graphs) - 1)
}

// markCaptured sets the captured mark on the event of an op a graph replayed.
func markCaptured(e *timeline.Event, graph uint32) {
	if graph != 0 && e.Kind.IsBusy() {
		e.Aux |= timeline.AuxCaptured
	}
}
