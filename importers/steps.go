package importers

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/xfertop/xfertop/steps"
	"github.com/xfertop/xfertop/timeline"
)

// maxRanges bounds the annotation ranges kept to infer steps from: past it, none is inferred.
const maxRanges = 1 << 20

// maxOps bounds the GPU ops kept to search for a repeating sequence in (32 bytes each): past it,
// the search looks at the first maxOps.
const maxOps = 1 << 21

// stepSink passes an input's events on and, when the input marks no step, keeps its annotation
// ranges; finish then infers steps from them (steps.Infer) and passes them on last. Every
// analysis of steps takes them in any order, so coming after the ops they cover changes nothing.
type stepSink struct {
	inner   Sink
	rng     string // the NVTX range an Nsight export's steps are (Options.StepRange)
	header  *Header
	marked  bool          // the input has steps of its own
	ranges  []steps.Range // the ranges that may be named like a marker: all that steps.Infer looks at
	seen    int           // the ranges seen, kept or not: maxRanges bounds them all
	over    bool          // more ranges than maxRanges
	markers []uint8       // by label: markerUnknown, markerYes or markerNo
	ops     []steps.Op
	kernels bool // a compute kernel was seen
	syms    map[symKey]uint32
	started bool // an event was seen
	events  int  // the steps it added
}

// NameHost passes a host's name on to the sink it wraps, where that takes names.
func (s *stepSink) NameHost(h int32, name string) {
	if n, ok := s.inner.(timeline.HostNamer); ok {
		n.NameHost(h, name)
	}
}

func (s *stepSink) Begin(h *Header) error {
	s.header = h
	return s.inner.Begin(h)
}

func (s *stepSink) Events(batch []timeline.Event) error {
	for i := range batch {
		e := &batch[i]
		s.started = true
		switch {
		case e.Kind == timeline.KindStep:
			s.marked, s.ranges, s.ops, s.syms, s.markers = true, nil, nil, nil, nil
		case s.marked:
		case e.Kind.IsBusy() && e.Stream != 0 && e.Device >= 0:
			s.op(e)
		case e.Kind != timeline.KindMark || e.End <= e.Start:
		case s.seen >= maxRanges:
			s.over = true
		default:
			s.seen++
			if s.mayMark(e.Label) {
				s.ranges = append(s.ranges, steps.Range{Start: e.Start, End: e.End, Label: e.Label, Host: e.Host, Pid: e.Aux})
			}
		}
	}
	return s.inner.Events(batch)
}

// What a label's name says of the ranges that bear it (stepSink.markers).
const (
	markerUnknown = iota // not looked up yet
	markerYes
	markerNo
)

// mayMark reports whether a range labelled label may be named like an iteration marker, so that
// only those are kept: an Nsight export's NVTX ranges are most of its events, and keeping every one
// of them (48 bytes each, in a slice grown by copying) was a tenth of analyze's CPU on the 2-GPU
// sample. A label not yet in the header's strings is kept, and looked up again at the next range.
func (s *stepSink) mayMark(label uint32) bool {
	if int(label) < len(s.markers) && s.markers[label] != markerUnknown {
		return s.markers[label] == markerYes
	}
	if s.header == nil || int(label) >= s.header.Strings.Len() {
		return true
	}
	if int(label) >= len(s.markers) {
		s.markers = slices.Grow(s.markers, int(label)+1-len(s.markers))[:int(label)+1]
	}
	s.markers[label] = markerNo
	if steps.IsMarker(s.header.Strings.Lookup(label)) {
		s.markers[label] = markerYes
	}
	return s.markers[label] == markerYes
}

// symKey is what names an op for the sequence search.
type symKey struct {
	label uint32
	kind  timeline.Kind
	sub   uint8
}

// op keeps a GPU op for the search for a repeating sequence.
func (s *stepSink) op(e *timeline.Event) {
	if len(s.ops) >= maxOps {
		return
	}
	if s.syms == nil {
		s.syms = map[symKey]uint32{}
	}
	k := symKey{e.Label, e.Kind, e.Sub}
	if e.Kind != timeline.KindCollective && e.Kind != timeline.KindMemcpy {
		k.sub = 0
	}
	sym, ok := s.syms[k]
	if !ok {
		sym = uint32(len(s.syms) + 1)
		s.syms[k] = sym
	}
	c := steps.NotColl
	s.kernels = s.kernels || e.Kind == timeline.KindKernel
	if e.Kind == timeline.KindCollective {
		c = steps.Collective
		if op := timeline.CollOp(e.Sub); op == timeline.CollAllReduce || op == timeline.CollReduceScatter {
			c = steps.Reducing
		}
	}
	s.ops = append(s.ops, steps.Op{Start: e.Start, End: e.End, Sym: sym, Device: e.Device, Stream: e.Stream, Host: e.Host, Coll: c})
}

// NoStepFound ends the account of an input in which no step could be found: the report then has
// no step (steps.count 0), and its figures are the whole input's.
const NoStepFound = ": no step found, so every figure covers the whole input"

// finish infers the steps of an input that marks none and passes them on; it says how they were
// found, or why none were.
func (s *stepSink) finish() (string, error) {
	if s.marked || s.header == nil || !s.started {
		return "", nil
	}
	var f steps.Found
	ok := false
	if !s.over {
		for i := range s.ranges {
			s.ranges[i].Name = s.header.Strings.Lookup(s.ranges[i].Label)
		}
		f, ok = steps.Infer(s.ranges)
	}
	s.ranges = nil
	seq := "no GPU kernel to look for a repeating sequence in"
	if !ok && s.kernels {
		// An input of collectives alone (a Flight Recorder dump, NCCL Inspector's logs) is
		// not searched: its sequence is the collectives, not the step's work.
		f, ok = steps.InferSequence(s.ops)
		seq = f.How
	}
	s.ops, s.syms = nil, nil
	if !ok {
		ranges := "no NVTX range named like an iteration marker (" + steps.Markers() + ") occurs twice"
		if s.over {
			ranges = fmt.Sprintf("it has more than %d annotation ranges to look for markers in", maxRanges)
		}
		if s.header.Format == FormatNsys || s.over || s.kernels {
			marks := "the input marks no step"
			if s.header.Format == FormatNsys {
				marks += fmt.Sprintf(" (no NVTX range named %q, the --step-range)", cmp.Or(s.rng, "ProfilerStep"))
			}
			return marks + ", " + ranges + "; " + seq + NoStepFound, nil
		}
		return "", nil
	}
	batch := make([]timeline.Event, len(f.Steps))
	for i, iv := range f.Steps {
		batch[i] = timeline.Event{Kind: timeline.KindStep, Start: iv.Start, End: iv.End, Device: timeline.NoDevice, Peer: timeline.NoDevice,
			Host: f.Host, Aux: uint32(i + 1), Label: f.Label}
	}
	s.events = len(batch)
	return "steps " + f.How, s.inner.Events(batch)
}
