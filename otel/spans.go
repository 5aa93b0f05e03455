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
	// AttrGraphCaptured marks an op a CUDA graph replayed (timeline.Event.Captured).
	AttrGraphCaptured = attribute.Key("xfertop.graph.captured")
	// AttrEmulated marks a send, receive or collective that stood in for the topology's (the cuda
	// backend's --fit with ranks sharing a GPU: timeline.Event.Emulated); such a span has no
	// xfertop.gbps, as its time is no rate of the topology's links.
	AttrEmulated = attribute.Key("xfertop.emulated")
	// AttrTimeUnknown marks an op its source knows ran but not when or for how long
	// (timeline.Event.TimeUnknown: a Flight Recorder entry not retired, without duration_ms): its
	// span starts at the op's creation and its 0 length is a placeholder, not a duration.
	AttrTimeUnknown = attribute.Key("xfertop.time_unknown")
	AttrWaitNs      = attribute.Key("xfertop.wait.ns")
	AttrWaitCause   = attribute.Key("xfertop.wait.cause")
	AttrStraggler   = attribute.Key("xfertop.barrier.straggler")
	AttrLateness    = attribute.Key("xfertop.barrier.lateness_ns")
	AttrStatus      = attribute.Key("xfertop.status")

	// With Detail full, these carry the rest of each event, so a receiver rebuilds it exactly.
	AttrSeq    = attribute.Key("xfertop.seq")       // the event's place in its session's stream
	AttrSub    = attribute.Key("xfertop.sub")       // Event.Sub
	AttrAux    = attribute.Key("xfertop.aux")       // Event.Aux (steps and groups carry it as xfertop.step, xfertop.group.ops)
	AttrLabel  = attribute.Key("xfertop.label")     // the event's label: kernel name, alert message
	AttrQueued = attribute.Key("xfertop.queued_ns") // Event.Queued, ns since the epoch
	AttrTail   = attribute.Key("xfertop.tail")      // the root of events held without a step (after the last, or past maxPending)

	// Resource attributes (each host's).
	ResHost       = attribute.Key("xfertop.host")    // host index
	ResSession    = attribute.Key("xfertop.session") // one exporting process: its seq numbers are one sequence
	ResDetail     = attribute.Key("xfertop.detail")  // DetailSpans or DetailFull
	ResMetaPrefix = "xfertop.meta."                  // the run's description (recordings.MetaPairs), one attribute per pair
)

// Detail levels of the export.
const (
	// DetailSpans exports what a person reads in a trace viewer: transfers, collectives, groups,
	// barrier waits and communicator creations; kernels, waits, samples and instants are left out,
	// and steps may be sampled or skipped by the span budget.
	DetailSpans = "spans"
	// DetailFull exports every event, each with the attributes needed to rebuild it exactly and its
	// place in the stream (xfertop.seq), without sampling, span budget or minimum span; the export
	// slows the producer down rather than drop events.
	DetailFull = "full"
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
	// Full exports every event with every field (DetailFull); event i of the step is numbered
	// SeqBase+i and the step itself SeqBase+len(events), their order in the stream.
	Full    bool
	SeqBase int64
}

// exported reports whether an event becomes a span (with Detail full, every event does).
func exported(e *timeline.Event, full bool) bool {
	if full {
		return e.Kind != timeline.KindStep
	}
	switch e.Kind {
	case timeline.KindMemcpy:
		return timeline.CopyDir(e.Sub) != timeline.CopySet
	case timeline.KindSend, timeline.KindRecv, timeline.KindCollective, timeline.KindGroupLaunch,
		timeline.KindBarrier, timeline.KindCommInit:
		return true
	case timeline.KindLinkBytes:
		return true // what the links carried: a receiver's link figures are the engine's, not inferred
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
	case timeline.KindLinkBytes:
		if link, dir, ok := timeline.UnpackLink(e.Sub); ok {
			return "link " + timeline.LinkName(link) + " " + dirNames[dir]
		}
		if dir, ok := timeline.UnpackFabricLink(e.Sub); ok {
			return "switch port " + timeline.PortName(e.Aux) + " " + [2]string{"up", "down"}[dir]
		}
	}
	return e.Kind.String()
}

// buildStep turns one step's events into span specs: specs[0] is the step root.
func buildStep(step *timeline.Event, evs []timeline.Event, labels Labels, scenario string, f Filter) []spanSpec {
	notes := gatherNotes(evs, labels)
	root := rootSpec(step, len(evs), labels, scenario, f)
	if root.errMsg == "" {
		for _, m := range notes.alerts {
			root.errMsg = m
			break
		}
	}
	specs := []spanSpec{root}

	// Groups first, so their members can name them as parent.
	groupSpec := map[uint32]int{}
	order := make([]int, 0, len(evs))
	for i := range evs {
		if exported(&evs[i], f.Full) {
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
		sp := notes.childSpec(e, f.SeqBase+int64(i), labels, f)
		if e.Group != 0 && e.Kind != timeline.KindGroupLaunch {
			if g, ok := groupSpec[e.Group]; ok {
				sp.parent = g
			}
		}
		if e.Kind != timeline.KindGroupLaunch && sp.errMsg == "" && sp.end-sp.start < f.MinSpanNs && !f.Full {
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

// rootSpec is the span of the step itself; n is the number of the step's events.
func rootSpec(step *timeline.Event, n int, labels Labels, scenario string, f Filter) spanSpec {
	root := spanSpec{name: fmt.Sprintf("step %d", step.Aux), start: step.Start, end: step.End, parent: -1, kind: timeline.KindStep,
		attrs: []attribute.KeyValue{AttrKind.String("step"), AttrStep.Int64(int64(step.Aux))}}
	if scenario != "" {
		root.attrs = append(root.attrs, AttrScenario.String(scenario))
	}
	if f.Full {
		root.host = step.Host
		if step.Aux == tailStep {
			root.attrs = append(root.attrs, AttrTail.Bool(true))
		} else {
			root.attrs = fullAttrs(step, labels, root.attrs)
			root.attrs = append(root.attrs, AttrSeq.Int64(f.SeqBase+int64(n)))
		}
	}
	if step.Status != timeline.StatusOK {
		root.errMsg = "the step did not complete"
	}
	return root
}

// stepNotes is what a step's other events say about its ops: the alert that failed them, the
// wait before them, who arrived last at each barrier.
type stepNotes struct {
	alerts   map[uint64]string
	peerWait map[[2]int64]*timeline.Event // (op, device) → its peer wait
	lastAt   map[uint64]int32             // barrier op → the rank that arrived last
	arrivals map[uint64][]int64
}

func gatherNotes(evs []timeline.Event, labels Labels) stepNotes {
	n := stepNotes{alerts: map[uint64]string{}, peerWait: map[[2]int64]*timeline.Event{},
		lastAt: map[uint64]int32{}, arrivals: map[uint64][]int64{}}
	lastArrive := map[uint64]int64{}
	for i := range evs {
		e := &evs[i]
		switch e.Kind {
		case timeline.KindAlert:
			n.alerts[e.Op] = labels.Lookup(e.Label)
		case timeline.KindPeerWait:
			n.peerWait[[2]int64{int64(e.Op), int64(e.Device)}] = e
		case timeline.KindBarrier:
			n.arrivals[e.Op] = append(n.arrivals[e.Op], e.Start)
			if a, ok := lastArrive[e.Op]; !ok || e.Start > a {
				lastArrive[e.Op], n.lastAt[e.Op] = e.Start, e.Device
			}
		}
	}
	return n
}

// childSpec is the span of one of the step's events, parented to the root; seq is its sequence
// number in the stream.
func (n *stepNotes) childSpec(e *timeline.Event, seq int64, labels Labels, f Filter) spanSpec {
	sp := spanSpec{name: spanName(e), start: e.Start, end: e.End, host: e.Host, parent: 0, kind: e.Kind}
	// The step number lives on the trace's root; children carry only what is theirs.
	sp.attrs = eventAttrs(e, make([]attribute.KeyValue, 0, 12))
	if e.Kind == timeline.KindBarrier {
		wait := e.Dur()
		med := timeline.Percentile(append([]int64(nil), n.arrivals[e.Op]...), 50)
		sp.attrs = append(sp.attrs, AttrWaitNs.Int64(wait), AttrWaitCause.String("barrier_wait"), AttrStraggler.Bool(n.lastAt[e.Op] == e.Device))
		if n.lastAt[e.Op] == e.Device {
			sp.attrs = append(sp.attrs, AttrLateness.Int64(e.Start-med))
		}
	}
	if w := n.peerWait[[2]int64{int64(e.Op), int64(e.Device)}]; w != nil && e.Kind != timeline.KindBarrier && e.Kind != timeline.KindPeerWait {
		sp.attrs = append(sp.attrs, AttrWaitNs.Int64(w.Dur()), AttrWaitCause.String("peer_wait"))
		if e.Status != timeline.StatusOK && !f.Full {
			sp.start = w.Start // a stuck op's span covers its wait (with full detail, the wait is a span of its own)
		}
	}
	if f.Full {
		sp.attrs = fullAttrs(e, labels, sp.attrs)
		sp.attrs = append(sp.attrs, AttrSeq.Int64(seq))
	}
	if e.Status != timeline.StatusOK && e.Kind != timeline.KindAlert {
		sp.errMsg = n.alerts[e.Op]
		if sp.errMsg == "" {
			sp.errMsg = fmt.Sprintf("%s failed (status %d)", sp.name, e.Status)
		}
	}
	return sp
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

// tailStep is the step number of the root made for the events after the last step (Close).
const tailStep = 1 << 31

// eventAttrs appends the attributes every export gives an event's span: what a person reads.
func eventAttrs(e *timeline.Event, attrs []attribute.KeyValue) []attribute.KeyValue {
	attrs = append(attrs, AttrKind.String(e.Kind.String()))
	if e.Device >= 0 {
		attrs = append(attrs, AttrDevice.Int64(int64(e.Device)))
	}
	if e.Stream != 0 {
		attrs = append(attrs, AttrStream.Int64(int64(e.Stream)), AttrPriority.Int64(int64(e.Priority)))
	}
	if e.Op != 0 {
		attrs = append(attrs, AttrOp.Int64(int64(e.Op)))
	}
	if e.Bytes > 0 {
		attrs = append(attrs, AttrBytes.Int64(e.Bytes))
		if d := e.Dur(); d > 0 && !e.Emulated() {
			attrs = append(attrs, AttrGBps.Float64(float64(e.Bytes)/float64(d)))
		}
	}
	if e.Peer >= 0 {
		attrs = append(attrs, AttrPeer.Int64(int64(e.Peer)))
	}
	if e.Comm != 0 {
		attrs = append(attrs, AttrComm.Int64(int64(e.Comm)))
	}
	switch e.Kind {
	case timeline.KindMemcpy:
		attrs = append(attrs, AttrDirection.String(timeline.CopyDir(e.Sub).String()))
	case timeline.KindCollective:
		attrs = append(attrs, AttrCollective.String(timeline.CollOp(e.Sub).String()), AttrRanks.Int64(int64(e.Ranks)))
	case timeline.KindGroupLaunch:
		attrs = append(attrs, AttrGroup.Int64(int64(e.Group)), AttrGroupOps.Int64(int64(e.Aux)))
	case timeline.KindBarrier:
		attrs = append(attrs, AttrBarrier.Int64(int64(e.Barrier)), AttrRanks.Int64(int64(e.Ranks)))
	case timeline.KindLinkBytes:
		if link, dir, ok := timeline.UnpackLink(e.Sub); ok {
			attrs = append(attrs, AttrSub.Int64(int64(e.Sub)), attribute.String("xfertop.link", timeline.LinkName(link)),
				attribute.String("network.io.direction", dirNames[dir]))
		} else if dir, ok := timeline.UnpackFabricLink(e.Sub); ok {
			attrs = append(attrs, AttrSub.Int64(int64(e.Sub)), attribute.String("xfertop.link", "switch port"),
				attribute.String("xfertop.switch_port", timeline.PortName(e.Aux)), attribute.String("network.io.direction", [2]string{"up", "down"}[dir]))
		}
	}
	if e.Captured() {
		attrs = append(attrs, AttrGraphCaptured.Bool(true))
	}
	if e.Emulated() {
		attrs = append(attrs, AttrEmulated.Bool(true))
	}
	if e.TimeUnknown() {
		attrs = append(attrs, AttrTimeUnknown.Bool(true))
	}
	if e.Status != timeline.StatusOK {
		attrs = append(attrs, AttrStatus.Int64(int64(e.Status)))
	}
	return attrs
}

// fullAttrs appends what eventAttrs leaves out of e, so that, with the span's start and end and the
// resource's host, every field of the event is carried (DetailFull). Zero fields are left out.
func fullAttrs(e *timeline.Event, labels Labels, attrs []attribute.KeyValue) []attribute.KeyValue {
	if e.Kind == timeline.KindStep { // the root carries the kind and the step number (Aux) already
		if e.Device != timeline.NoDevice {
			attrs = append(attrs, AttrDevice.Int64(int64(e.Device)))
		}
		if e.Stream != 0 {
			attrs = append(attrs, AttrStream.Int64(int64(e.Stream)))
		}
		if e.Priority != 0 {
			attrs = append(attrs, AttrPriority.Int64(int64(e.Priority)))
		}
		if e.Op != 0 {
			attrs = append(attrs, AttrOp.Int64(int64(e.Op)))
		}
		if e.Bytes != 0 {
			attrs = append(attrs, AttrBytes.Int64(e.Bytes))
		}
		if e.Peer != timeline.NoDevice {
			attrs = append(attrs, AttrPeer.Int64(int64(e.Peer)))
		}
		if e.Comm != 0 {
			attrs = append(attrs, AttrComm.Int64(int64(e.Comm)))
		}
		if e.Status != timeline.StatusOK {
			attrs = append(attrs, AttrStatus.Int64(int64(e.Status)))
		}
	} else {
		if e.Device < timeline.NoDevice {
			attrs = append(attrs, AttrDevice.Int64(int64(e.Device)))
		}
		if e.Peer < timeline.NoDevice {
			attrs = append(attrs, AttrPeer.Int64(int64(e.Peer)))
		}
		if e.Stream == 0 && e.Priority != 0 {
			attrs = append(attrs, AttrPriority.Int64(int64(e.Priority)))
		}
		if e.Bytes < 0 {
			attrs = append(attrs, AttrBytes.Int64(e.Bytes))
		}
		if e.Aux != 0 && e.Kind != timeline.KindGroupLaunch {
			attrs = append(attrs, AttrAux.Int64(int64(e.Aux)))
		}
	}
	if e.Sub != 0 {
		attrs = append(attrs, AttrSub.Int64(int64(e.Sub)))
	}
	if e.Group != 0 && e.Kind != timeline.KindGroupLaunch {
		attrs = append(attrs, AttrGroup.Int64(int64(e.Group)))
	}
	if e.Ranks != 0 && e.Kind != timeline.KindCollective && e.Kind != timeline.KindBarrier {
		attrs = append(attrs, AttrRanks.Int64(int64(e.Ranks)))
	}
	if e.Barrier != 0 && e.Kind != timeline.KindBarrier {
		attrs = append(attrs, AttrBarrier.Int64(int64(e.Barrier)))
	}
	if e.Label != 0 {
		attrs = append(attrs, AttrLabel.String(labels.Lookup(e.Label)))
	}
	if e.Queued != 0 {
		attrs = append(attrs, AttrQueued.Int64(e.Queued))
	}
	return attrs
}
