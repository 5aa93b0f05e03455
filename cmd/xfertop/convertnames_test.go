package main

import (
	"path/filepath"
	"testing"

	"github.com/xfertop/xfertop/importers"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// A recording written to another (a conversion, an import the console replays) keeps the hosts'
// names the input gave after its description (attach --record's HostNames chunks): the copy's
// replay names the hosts as the input's does.
func TestRecordingSinkKeepsHostNamesLearnedLate(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "attach.xfr"), filepath.Join(dir, "copy.xfr")
	w, err := recordings.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	kernel := func(dev int32, host uint16, start int64) timeline.Event {
		return timeline.Event{Kind: timeline.KindKernel, Start: start, End: start + 500, Device: dev, Host: host, Peer: timeline.NoDevice, Stream: 1}
	}
	for _, err := range []error{
		w.WriteMeta(recordings.Meta{Source: "attach", Extra: map[string]string{timeline.HostsInEventsKey: "1"}}),
		w.WriteHostNames([]recordings.HostName{{Host: 0, Name: "node-a"}}),
		w.WriteEvents([]timeline.Event{kernel(0, 0, 0)}),
		w.WriteHostNames([]recordings.HostName{{Host: 1, Name: "node-b"}}),
		w.WriteEvents([]timeline.Event{kernel(1, 1, 1000)}),
		w.WriteHostNames([]recordings.HostName{{Host: 2, Name: "node-c"}}), // after the last events
		w.Close(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	sink := &recordingSink{path: dst}
	res, err := importers.Stream([]string{src}, importers.Options{}, sink)
	if err == nil {
		err = sink.close(res)
	}
	if err != nil {
		t.Fatal(err)
	}
	rec, err := recordings.ReadFile(dst, recordings.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := timeline.HostNames(rec.Meta)
	for h, name := range map[int32]string{0: "node-a", 1: "node-b", 2: "node-c"} {
		if got[h] != name {
			t.Errorf("the copy names host %d %q; want %q (all: %v)", h, got[h], name, got)
		}
	}
	if len(rec.Events) != 2 {
		t.Errorf("the copy holds %d events; want 2", len(rec.Events))
	}
}
