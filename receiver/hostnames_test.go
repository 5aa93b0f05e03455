package receiver

import (
	"testing"
	"time"

	"github.com/xfertop/xfertop/timeline"
)

// namedSink collects events and the host names it is given, with how many events it had then.
type namedSink struct {
	collect
	names  map[int32]string
	before map[int32]int
}

func (s *namedSink) NameHost(h int32, name string) {
	n := 0
	for _, e := range s.evs {
		if int32(e.Host) == h {
			n++
		}
	}
	s.names[h], s.before[h] = name, n
}

// A sender's host.name names its host (xfertop.host) in the merged description and to the sink,
// before the host's first event; the host-N an xfertop sender gives a host of no name is no
// name. Before, the names stayed in the receiver's stats: the views showed host numbers.
func TestMergeNamesHosts(t *testing.T) {
	sink := &namedSink{names: map[int32]string{}, before: map[int32]int{}}
	m := NewMerger(timeline.NewStrings(), time.Second, func(timeline.Meta) timeline.Sink { return sink })
	named := kernelsOn("s", 1, 2, 2)
	named.ResourceSpans[0].Resource.Attributes[1] = str("host.name", "node-b")
	mergeAll(t, m, time.Now(), marshal(t, kernelsOn("s", 0, 0, 2)), marshal(t, named))
	if len(sink.names) != 1 || sink.names[1] != "node-b" || sink.before[1] != 0 {
		t.Errorf("sink named %v (after %v of the host's events); want host 1 node-b alone, before its events", sink.names, sink.before)
	}
	if len(sink.evs) != 4 {
		t.Errorf("%d events; want both hosts' 4", len(sink.evs))
	}
	meta := m.Meta()
	if got := timeline.HostNames(meta); len(got) != 1 || got[1] != "node-b" {
		t.Errorf("merged description names %v; want host 1 node-b", got)
	}
}
