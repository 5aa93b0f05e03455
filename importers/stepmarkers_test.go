package importers

import (
	"reflect"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/steps"
	"github.com/xfertop/xfertop/timeline"
)

// The step sink keeps only the annotation ranges whose names may mark an iteration (a label not in
// the header's strings yet included), and infers from them the steps that steps.Infer finds over
// every range; every range still counts towards maxRanges.
func TestStepSinkKeepsMarkerRanges(t *testing.T) {
	strs := timeline.NewStrings()
	layer, fwd, hook := strs.ID("layer_3"), strs.ID("forward"), strs.ID("FSDP::root_pre_forward")
	late := uint32(strs.Len()) // named like a marker only after its first range has passed
	mark := func(label uint32, start int64) timeline.Event {
		return timeline.Event{Kind: timeline.KindMark, Start: start, End: start + 50, Label: label, Host: 1, Aux: 7,
			Device: timeline.NoDevice, Peer: timeline.NoDevice}
	}
	var evs []timeline.Event
	for i := range int64(4) {
		at := 1000 * i
		evs = append(evs, mark(layer, at+10), mark(hook, at), mark(fwd, at+20), mark(layer, at+30), mark(late, at+40))
	}
	var inner Collect
	s := &stepSink{inner: &inner}
	if err := s.Begin(&Header{Format: FormatNsys, Strings: strs}); err != nil {
		t.Fatal(err)
	}
	if err := s.Events(evs[:5]); err != nil {
		t.Fatal(err)
	}
	if got := strs.ID("optimizer.step"); got != late {
		t.Fatalf("the late label is %d; want %d", got, late)
	}
	if err := s.Events(evs[5:]); err != nil {
		t.Fatal(err)
	}
	if len(s.ranges) != 8 || s.seen != len(evs) {
		t.Errorf("%d ranges kept of %d seen; want the 4 hooks and 4 of the late label, of %d", len(s.ranges), s.seen, len(evs))
	}

	// What Infer finds over every range, named.
	var all []steps.Range
	for _, e := range evs {
		all = append(all, steps.Range{Start: e.Start, End: e.End, Label: e.Label, Name: strs.Lookup(e.Label), Host: e.Host, Pid: e.Aux})
	}
	want, ok := steps.Infer(all)
	if !ok {
		t.Fatal("steps.Infer finds no step over every range")
	}
	how, err := s.finish()
	if err != nil {
		t.Fatal(err)
	}
	if how != "steps "+want.How {
		t.Errorf("finish says %q; want %q", how, "steps "+want.How)
	}
	var got []timeline.Interval
	for _, e := range inner.All {
		if e.Kind == timeline.KindStep {
			got = append(got, timeline.Interval{Start: e.Start, End: e.End})
		}
	}
	if !reflect.DeepEqual(got, want.Steps) {
		t.Errorf("steps %v; want %v", got, want.Steps)
	}
}

// Ranges that mark nothing still count towards maxRanges: past it, none is inferred, as when every
// range was kept.
func TestStepSinkCountsEveryRange(t *testing.T) {
	strs := timeline.NewStrings()
	layer, hook := strs.ID("layer_3"), strs.ID("train_step")
	s := &stepSink{inner: discardSink{}}
	if err := s.Begin(&Header{Format: FormatNsys, Strings: strs}); err != nil {
		t.Fatal(err)
	}
	batch := make([]timeline.Event, 4096)
	for sent := 0; sent <= maxRanges; sent += len(batch) {
		for i := range batch {
			label := layer
			if (sent+i)%1000 == 0 {
				label = hook
			}
			batch[i] = timeline.Event{Kind: timeline.KindMark, Start: int64(sent + i), End: int64(sent+i) + 1, Label: label}
		}
		if err := s.Events(batch); err != nil {
			t.Fatal(err)
		}
	}
	how, err := s.finish()
	if err != nil {
		t.Fatal(err)
	}
	if !s.over || !strings.Contains(how, "more than 1048576 annotation ranges") {
		t.Errorf("over = %v, finish says %q; want more than maxRanges said", s.over, how)
	}
}

// discardSink drops what it is given.
type discardSink struct{}

func (discardSink) Begin(*Header) error           { return nil }
func (discardSink) Events([]timeline.Event) error { return nil }
