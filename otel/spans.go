package otel

import (
	"fmt"
	"sort"

	"go.opentelemetry.io/otel/attribute"

	"github.com/xfertop/xfertop/timeline"
)

// Attribute keys. One namespace, documented in docs/otel.md.
const (
	AttrKind       = attribute.Key("xfertop.kind")
	AttrStep       = attribute.Key("xfertop.step")
	AttrScenario   = attribute.Key("xfertop.scenario")
	AttrOp         = attribute.Key("xfertop.op")
	AttrBytes      = attribute.Key("xfertop.bytes")
	AttrGBps       = attribute.Key("xfertop.gbps")
	AttrDevice     = attribute.Key("xfertop.device")
	AttrStream     = attribute.Key("xfertop.stream")
	AttrPeer       = attribute.Key("xfertop.peer")
	AttrPriority   = attribute.Key("xfertop.priority")
	AttrComm       = attribute.Key("xfertop.communicator")
	AttrGroup      = attribute.Key("xfertop.group")
	AttrGroupOps   = attribute.Key("xfertop.group.ops")
	AttrDirection  = attribute.Key("xfertop.copy.direction")
	AttrCollective = attribute.Key("xfertop.collective")
	AttrRanks      = attribute.Key("xfertop.ranks")
	AttrBarrier    = attribute.Key("xfertop.barrier")
	AttrWaitNs     = attribute.Key("xfertop.wait.ns")
	AttrWaitCause  = attribute.Key("xfertop.wait.cause")
	AttrStraggler  = attribute.Key("xfertop.barrier.straggler")
	AttrLateness   = attribute.Key("xfertop.barrier.lateness_ns")
	AttrStatus     = attribute.Key("xfertop.status")
)

// spanSpec is one span to create: the SDK is only asked to build what these say.
type spanSpec struct {
	name       string
	start, end int64 // ns since the session epoch
	host       uint16
	parent     int // index of the parent spec; -1 for the step root
	links      []int
	attrs      []attribute.KeyValue
	errMsg     string
	kind       timeline.Kind
}

// Labels resolves label ids.
type Labels interface{ Lookup(id uint32) string }

// Filter is the volume control applied to one step's spans.
type Filter struct {
	// MinSpanNs drops spans shorter than this (the step root, groups with kept members and failed
	// ops are always kept).
	MinSpanNs int64
}

// exported reports whether an event becomes a span.
func exported(e *timeline.Event) bool {
	switch e.Kind {
	case timeline.KindMemcpy:
		return timeline.CopyDir(e.Sub) != timeline.CopySet
	case timeline.KindSend, timeline.KindRecv, timeline.KindCollective, timeline.KindGroupLaunch,
		timeline.KindBarrier, timeline.KindCommInit:
		return true
	}
	return false
}

func spanName(e *timeline.Event) string {
	switch e.Kind {
	case timeline.KindMemcpy:
		return "memcpy " + e.OpName()
	case timeline.KindSend, timeline.KindRecv, timeline.KindCollective:
		return e.OpName()
	case timeline.KindGroupLaunch:
		return "group"
	case timeline.KindBarrier:
		return "barrier wait"
	case timeline.KindCommInit:
		return "communicator init"
	}
	return e.Kind.String()
}

// buildStep turns one step's events into span specs: specs[0] is the step root.
func buildStep(step *timeline.Event, evs []timeline.Event, labels Labels, scenario string, f Filter) []spanSpec {
	root := spanSpec{name: fmt.Sprintf("step %d", step.Aux), start: step.Start, end: step.End, parent: -1, kind: timeline.KindStep,
		attrs: []attribute.KeyValue{AttrKind.String("step"), AttrStep.Int64(int64(step.Aux))}}
	if scenario != "" {
		root.attrs = append(root.attrs, AttrScenario.String(scenario))
	}
	if step.Status != timeline.StatusOK {
		root.errMsg = "the step did not complete"
	}
	specs := []spanSpec{root}

	// What the other events say about ops: the alert that failed them, the wait before them.
	alerts := map[uint64]string{}
	peerWait := map[[2]int64]*timeline.Event{} // (op, device) → its peer wait
	lastAt := map[uint64]int32{}               // barrier op → the rank that arrived last
	lastArrive := map[uint64]int64{}
	arrivals := map[uint64][]int64{}
	for i := range evs {
		e := &evs[i]
		switch e.Kind {
		case timeline.KindAlert:
			alerts[e.Op] = labels.Lookup(e.Label)
		case timeline.KindPeerWait:
			peerWait[[2]int64{int64(e.Op), int64(e.Device)}] = e
		case timeline.KindBarrier:
			arrivals[e.Op] = append(arrivals[e.Op], e.Start)
			if a, ok := lastArrive[e.Op]; !ok || e.Start > a {
				lastArrive[e.Op], lastAt[e.Op] = e.Start, e.Device
			}
		}
	}
	if len(alerts) > 0 && root.errMsg == "" {
		for _, m := range alerts {
			specs[0].errMsg = m
			break
		}
	}

	// Groups first, so their members can name them as parent.
	groupSpec := map[uint32]int{}
	order := make([]int, 0, len(evs))
	for i := range evs {
		if exported(&evs[i]) {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool {
		ga, gb := evs[order[a]].Kind == timeline.KindGroupLaunch, evs[order[b]].Kind == timeline.KindGroupLaunch
		return ga && !gb
	})
	sends := map[uint64][]int{}
	recvs := map[uint64][]int{}
	for _, i := range order {
		e := &evs[i]
		sp := spanSpec{name: spanName(e), start: e.Start, end: e.End, host: e.Host, parent: 0, kind: e.Kind}
		// The step number lives on the trace's root; children carry only what is theirs.
		sp.attrs = make([]attribute.KeyValue, 0, 12)
		sp.attrs = append(sp.attrs, AttrKind.String(e.Kind.String()))
		if e.Device >= 0 {
			sp.attrs = append(sp.attrs, AttrDevice.Int64(int64(e.Device)))
		}
		if e.Stream != 0 {
			sp.attrs = append(sp.attrs, AttrStream.Int64(int64(e.Stream)), AttrPriority.Int64(int64(e.Priority)))
		}
		if e.Op != 0 {
			sp.attrs = append(sp.attrs, AttrOp.Int64(int64(e.Op)))
		}
		if e.Bytes > 0 {
			sp.attrs = append(sp.attrs, AttrBytes.Int64(e.Bytes))
			if d := e.Dur(); d > 0 {
				sp.attrs = append(sp.attrs, AttrGBps.Float64(float64(e.Bytes)/float64(d)))
			}
		}
		if e.Peer >= 0 {
			sp.attrs = append(sp.attrs, AttrPeer.Int64(int64(e.Peer)))
		}
		if e.Comm != 0 {
			sp.attrs = append(sp.attrs, AttrComm.Int64(int64(e.Comm)))
		}
		switch e.Kind {
		case timeline.KindMemcpy:
			sp.attrs = append(sp.attrs, AttrDirection.String(timeline.CopyDir(e.Sub).String()))
		case timeline.KindCollective:
			sp.attrs = append(sp.attrs, AttrCollective.String(timeline.CollOp(e.Sub).String()), AttrRanks.Int64(int64(e.Ranks)))
		case timeline.KindGroupLaunch:
			sp.attrs = append(sp.attrs, AttrGroup.Int64(int64(e.Group)), AttrGroupOps.Int64(int64(e.Aux)))
		case timeline.KindBarrier:
			wait := e.Dur()
			med := timeline.Percentile(append([]int64(nil), arrivals[e.Op]...), 50)
			sp.attrs = append(sp.attrs, AttrBarrier.Int64(int64(e.Barrier)), AttrRanks.Int64(int64(e.Ranks)),
				AttrWaitNs.Int64(wait), AttrWaitCause.String("barrier_wait"), AttrStraggler.Bool(lastAt[e.Op] == e.Device))
			if lastAt[e.Op] == e.Device {
				sp.attrs = append(sp.attrs, AttrLateness.Int64(e.Start-med))
			}
		}
		if w := peerWait[[2]int64{int64(e.Op), int64(e.Device)}]; w != nil && e.Kind != timeline.KindBarrier {
			sp.attrs = append(sp.attrs, AttrWaitNs.Int64(w.Dur()), AttrWaitCause.String("peer_wait"))
			if e.Status != timeline.StatusOK {
				sp.start = w.Start // a stuck op's span covers its wait
			}
		}
		if e.Status != timeline.StatusOK {
			sp.attrs = append(sp.attrs, AttrStatus.Int64(int64(e.Status)))
			sp.errMsg = alerts[e.Op]
			if sp.errMsg == "" {
				sp.errMsg = fmt.Sprintf("%s failed (status %d)", sp.name, e.Status)
			}
		}
		if e.Group != 0 && e.Kind != timeline.KindGroupLaunch {
			if g, ok := groupSpec[e.Group]; ok {
				sp.parent = g
			}
		}
		if e.Kind != timeline.KindGroupLaunch && sp.errMsg == "" && sp.end-sp.start < f.MinSpanNs {
			continue
		}
		specs = append(specs, sp)
		idx := len(specs) - 1
		switch e.Kind {
		case timeline.KindGroupLaunch:
			groupSpec[e.Group] = idx
		case timeline.KindSend:
			sends[e.Op] = append(sends[e.Op], idx)
		case timeline.KindRecv:
			recvs[e.Op] = append(recvs[e.Op], idx)
		}
	}
	// A send and its receive point at each other.
	for op, ss := range sends {
		for _, s := range ss {
			for _, r := range recvs[op] {
				specs[s].links = append(specs[s].links, r)
				specs[r].links = append(specs[r].links, s)
			}
		}
	}
	return pruneGroups(specs, f)
}

// pruneGroups drops group spans that are shorter than the minimum and kept no member, re-indexing.
func pruneGroups(specs []spanSpec, f Filter) []spanSpec {
	if f.MinSpanNs <= 0 {
		return specs
	}
	used := make([]bool, len(specs))
	for _, s := range specs {
		if s.parent > 0 {
			used[s.parent] = true
		}
	}
	remap := make([]int, len(specs))
	out := specs[:0:0]
	for i, s := range specs {
		if s.kind == timeline.KindGroupLaunch && !used[i] && s.end-s.start < f.MinSpanNs && s.errMsg == "" {
			remap[i] = -1
			continue
		}
		remap[i] = len(out)
		out = append(out, s)
	}
	for i := range out {
		if out[i].parent > 0 {
			out[i].parent = remap[out[i].parent]
		}
		links := out[i].links[:0:0]
		for _, l := range out[i].links {
			if remap[l] >= 0 {
				links = append(links, remap[l])
			}
		}
		out[i].links = links
	}
	return out
}
