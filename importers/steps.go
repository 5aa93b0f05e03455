package importers

import (
	"fmt"

	"github.com/xfertop/xfertop/steps"
	"github.com/xfertop/xfertop/timeline"
)

// maxRanges bounds the annotation ranges kept to infer steps from: past it, none is inferred.
const maxRanges = 1 << 20

// stepSink passes an input's events on and, when the input marks no step, keeps its annotation
// ranges; finish then infers steps from them (steps.Infer) and passes them on last. Every
// analysis of steps takes them in any order, so coming after the ops they cover changes nothing.
type stepSink struct {
	inner   Sink
	header  *Header
	marked  bool // the input has steps of its own
	ranges  []steps.Range
	over    bool // more ranges than maxRanges
	started bool // an event was seen
	events  int  // the steps it added
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
			s.marked, s.ranges = true, nil
		case s.marked || e.Kind != timeline.KindMark || e.End <= e.Start:
		case len(s.ranges) >= maxRanges:
			s.over = true
		default:
			s.ranges = append(s.ranges, steps.Range{Start: e.Start, End: e.End, Label: e.Label, Host: e.Host, Pid: e.Aux})
		}
	}
	return s.inner.Events(batch)
}

// finish infers the steps of an input that marks none and passes them on; it says how they were
// found, or why none were.
func (s *stepSink) finish() (string, error) {
	if s.marked || s.header == nil || !s.started {
		return "", nil
	}
	if s.over {
		return fmt.Sprintf("the input marks no step, and has more than %d annotation ranges to look for repeats in: the whole input is one", maxRanges), nil
	}
	for i := range s.ranges {
		s.ranges[i].Name = s.header.Strings.Lookup(s.ranges[i].Label)
	}
	f, ok := steps.Infer(s.ranges)
	s.ranges = nil
	if !ok {
		if s.header.Format == FormatNsys {
			return "the input marks no step (no --step-range range), and no NVTX range named like an iteration marker (" + steps.Markers() +
				") occurs twice: the whole input is one", nil
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
