package hostmap

import (
	"slices"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// Each source places devices as its precedence says: the topology by id (a stray device past
// its hosts too), the events' hosts before --gpus-per-host, and nothing as unknown, never host 0.
func TestHost(t *testing.T) {
	events := timeline.Meta{Extra: map[string]string{timeline.HostsInEventsKey: "1"}}
	eventsAndCount := events
	eventsAndCount.GPUsPerHost = 4
	// The events name device 0 on host 1 and device 5 on host 0, against any count.
	named := []timeline.Event{{Device: 0, Host: 1}, {Device: 5, Host: 0}, {Device: 0, Host: 7}}
	type want struct {
		dev         int32
		host, local int32
		known       bool
	}
	for _, c := range []struct {
		name string
		meta timeline.Meta
		src  Source
		want []want
	}{
		{"topology", timeline.Meta{Topology: "h100x8", GPUsPerHost: 8, Devices: 16}, FromTopology,
			[]want{{0, 0, 0, true}, {9, 1, 1, true}, {100, 12, 4, true}, {-1, -1, -1, false}}},
		// A topology's hosts come before what the events say (the simulator's events agree).
		{"topology over events", timeline.Meta{Topology: "h100x8", GPUsPerHost: 8}, FromTopology,
			[]want{{0, 0, 0, true}, {5, 0, 5, true}}},
		{"events", events, FromEvents, []want{{0, 1, -1, true}, {5, 0, -1, true}, {3, -1, -1, false}}},
		{"events, then the count", eventsAndCount, FromEvents, []want{{0, 1, -1, true}, {5, 0, -1, true}, {6, 1, 2, true}}},
		{"count", timeline.Meta{Topology: "unknown", GPUsPerHost: 2}, FromCount, []want{{0, 0, 0, true}, {5, 2, 1, true}}},
		{"nothing", timeline.Meta{Devices: 8}, FromNone, []want{{0, -1, -1, false}, {5, -1, -1, false}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := New(c.meta)
			for i := range named {
				m.Add(&named[i])
			}
			if m.Source() != c.src {
				t.Errorf("Source = %v; want %v", m.Source(), c.src)
			}
			for _, w := range c.want {
				h, ok := m.Host(w.dev)
				if h != w.host || ok != w.known {
					t.Errorf("Host(%d) = %d, %v; want %d, %v", w.dev, h, ok, w.host, w.known)
				}
				if l, _ := m.Local(w.dev); l != w.local {
					t.Errorf("Local(%d) = %d; want %d", w.dev, l, w.local)
				}
			}
		})
	}
}

// A snapshot keeps what was learned when it was taken, and later Adds change neither it nor its
// answers; a snapshot is reused while nothing was learned.
func TestSnapshot(t *testing.T) {
	m := New(timeline.Meta{Extra: map[string]string{timeline.HostsInEventsKey: "1"}})
	m.Add(&timeline.Event{Device: 0, Host: 3})
	s := m.Snapshot()
	if m.Snapshot() != s {
		t.Error("a second Snapshot with nothing learned is a new copy")
	}
	m.Add(&timeline.Event{Device: 1, Host: 4})
	s.Add(&timeline.Event{Device: 2, Host: 5})
	if _, ok := s.Host(1); ok {
		t.Error("a snapshot learned what its map learned after it")
	}
	if _, ok := s.Host(2); ok {
		t.Error("Add changed a snapshot")
	}
	if h, ok := m.Snapshot().Host(1); h != 4 || !ok {
		t.Errorf("a new snapshot's Host(1) = %d, %v; want 4, true", h, ok)
	}
	if d, h := m.Learned(); d != 2 || h != 2 {
		t.Errorf("Learned = %d devices, %d hosts; want 2, 2", d, h)
	}
}

// Layout lists the hosts by number, each one's devices by id, and the devices of unknown host
// last, whatever order the devices come in.
func TestLayout(t *testing.T) {
	m := New(timeline.Meta{Extra: map[string]string{timeline.HostsInEventsKey: "1"}})
	for _, e := range []timeline.Event{{Device: 3, Host: 1}, {Device: 0, Host: 1}, {Device: 1, Host: 0}} {
		m.Add(&e)
	}
	got := m.Layout([]int32{9, 3, 1, 0})
	want := []Group{{Host: 0, Known: true, Devs: []int32{1}}, {Host: 1, Known: true, Devs: []int32{0, 3}}, {Host: -1, Devs: []int32{9}}}
	if len(got) != len(want) {
		t.Fatalf("Layout = %+v; want %+v", got, want)
	}
	for i := range want {
		if got[i].Host != want[i].Host || got[i].Known != want[i].Known || !slices.Equal(got[i].Devs, want[i].Devs) {
			t.Errorf("Layout[%d] = %+v; want %+v", i, got[i], want[i])
		}
	}
}

// A host carries the name a source gave it (the description's, or NameHost's as ranks join), its
// number staying the key: Label shows the name, else the number, ? for an unknown host; ByName
// finds a host by it; a snapshot keeps the names it was taken with. No name is made up.
func TestNames(t *testing.T) {
	meta := timeline.Meta{Extra: map[string]string{timeline.HostsInEventsKey: "1",
		timeline.HostNameKey(1): "node-a", "host.x.name": "junk", "host.01.name": "junk", timeline.HostNameKey(2): ""}}
	m := New(meta)
	m.Add(&timeline.Event{Device: 0, Host: 1})
	m.Add(&timeline.Event{Device: 1, Host: 0})
	s := m.Snapshot()
	m.NameHost(0, "node-b")
	for _, c := range []struct {
		m    *Map
		h    int32
		want string
	}{{m, 1, "node-a"}, {m, 0, "node-b"}, {m, 2, "2"}, {m, -1, "?"}, {s, 0, "0"}, {s, 1, "node-a"}, {m.Snapshot(), 0, "node-b"}} {
		if got := c.m.Label(c.h); got != c.want {
			t.Errorf("Label(%d) = %q; want %q", c.h, got, c.want)
		}
	}
	if h, ok := m.ByName("node-b"); h != 0 || !ok {
		t.Errorf(`ByName("node-b") = %d, %v; want 0, true`, h, ok)
	}
	if _, ok := m.ByName("node-c"); ok {
		t.Error(`ByName("node-c") found a host no source named`)
	}
	if m.Named() != 2 {
		t.Errorf("Named = %d; want 2 (the junk keys and the empty name are no names)", m.Named())
	}
	// A topology's map carries names too (a live source's), and its snapshot does not change after.
	topo := ByID(8)
	ts := topo.Snapshot()
	topo.NameHost(3, "rack3-node")
	if _, ok := ts.Name(3); ok {
		t.Error("a snapshot took a name given after it")
	}
	if n, _ := topo.Snapshot().Name(3); n != "rack3-node" {
		t.Errorf("a new snapshot's Name(3) = %q; want rack3-node", n)
	}
}

// An event of timeline.NoHost (a joined job's rank no source placed) names no host: its device
// stays unplaced, and a later event naming a host places it.
func TestNoHostLeavesUnplaced(t *testing.T) {
	m := New(timeline.Meta{Extra: map[string]string{timeline.HostsInEventsKey: "1"}})
	m.Add(&timeline.Event{Device: 2, Host: timeline.NoHost})
	if h, ok := m.Host(2); ok {
		t.Fatalf("Host(2) = %d, known; want unknown after an event of no host", h)
	}
	if d, h := m.Learned(); d != 0 || h != 0 {
		t.Errorf("Learned() = %d, %d; want 0, 0", d, h)
	}
	m.Add(&timeline.Event{Device: 2, Host: 1})
	if h, ok := m.Host(2); !ok || h != 1 {
		t.Errorf("Host(2) = %d, %v; want 1, known", h, ok)
	}
}
