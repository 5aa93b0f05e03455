// Package hostmap is the one answer to which host a device (a rank) is on. The analysis's link
// traffic, the diagnosis's culprits, the report, the console's cluster view and the OTLP
// attributes all ask it, so that no two of them place a device on different hosts.
//
// The answer comes, in this order of precedence, from:
//
//  1. the topology the job ran on (timeline.Meta.Topology with GPUsPerHost): device d is on host
//     d / GPUsPerHost, a device past the topology's hosts too (by its id, never by where it is
//     listed);
//  2. the hosts the events carry (timeline.Meta.HostsInEvents: attach and the plugin's merged
//     recordings, where each rank names its host): a device is on the host its first event named;
//  3. a count of GPUs per host given without a topology (attach's --gpus-per-host), for a device
//     whose events named no host;
//
// and otherwise the host is unknown, never host 0.
//
// A host is known by its number (the key every consumer uses); where a source of the job named it
// (the hosts the ranks' plugins reported, an OTLP sender's host.name: timeline.HostNameKey in the
// job's description, or NameHost as ranks join a live job) the map carries that name with it, and
// Label shows it. A host no source named is shown by its number; a name is never made up.
package hostmap

import (
	"cmp"
	"maps"
	"slices"
	"strconv"

	"github.com/xfertop/xfertop/timeline"
)

// Source says where a Map's answers come from.
type Source uint8

// Sources, in their order of precedence.
const (
	FromNone     Source = iota // no source says: every device's host is unknown
	FromTopology               // the topology's hosts: d / GPUsPerHost
	FromEvents                 // the hosts the devices' events name
	FromCount                  // a count of GPUs per host given without a topology
)

// String names the source as docs and reports do.
func (s Source) String() string {
	return [...]string{"unknown", "topology", "events", "gpus-per-host"}[s]
}

// maxLearned bounds the devices whose hosts a Map keeps from the events (a hostile stream's ids).
const maxLearned = 1 << 20

// Map places devices on hosts. A Map from New learns from the events it is given (Add) where the
// events carry hosts; Snapshot hands out a read-only copy for other goroutines. A Map is not safe
// for concurrent use; its snapshots are (Add leaves a snapshot as it is).
type Map struct {
	src Source
	// per is the GPUs per host of the topology (FromTopology) or of the count (FromCount, and the
	// fallback of FromEvents for a device whose events named no host); 0 when none was given.
	per     int
	learned map[int32]int32  // FromEvents: each device's host as its first event named it
	hosts   map[int32]int32  // FromEvents: how many learned devices each host has
	names   map[int32]string // the hosts' names, by number, where a source named them
	snap    *Map             // the last snapshot, while nothing was learned since
	frozen  bool             // a snapshot: Add leaves it alone
}

// New returns the map of the job m describes, with the host names m carries.
func New(m timeline.Meta) *Map {
	per := max(m.GPUsPerHost, 0)
	var x *Map
	switch {
	case per > 0 && m.Topology != "" && m.Topology != "unknown" && !m.HostsInEvents():
		x = &Map{src: FromTopology, per: per}
	case m.HostsInEvents():
		x = &Map{src: FromEvents, per: per, learned: map[int32]int32{}, hosts: map[int32]int32{}}
	case per > 0:
		x = &Map{src: FromCount, per: per}
	default:
		x = &Map{}
	}
	for h, name := range timeline.HostNames(m) {
		x.NameHost(h, name)
	}
	return x
}

// ByID returns the map of a job whose device d is on host d / perHost (a topology's); a map of
// unknown hosts when perHost is not positive.
func ByID(perHost int) *Map {
	if perHost <= 0 {
		return &Map{}
	}
	return &Map{src: FromTopology, per: perHost}
}

// Source says where the map's answers come from.
func (m *Map) Source() Source { return m.src }

// Add learns the host e names for its device, where the events carry hosts; the device's first
// event decides (a rank does not move). An event of timeline.NoHost names none: its device stays
// unplaced.
func (m *Map) Add(e *timeline.Event) {
	if m.src != FromEvents || m.frozen || e.Device < 0 || e.Host == timeline.NoHost {
		return
	}
	if _, ok := m.learned[e.Device]; ok || len(m.learned) >= maxLearned {
		return
	}
	h := int32(e.Host)
	m.learned[e.Device] = h
	m.hosts[h]++
	m.snap = nil
}

// NameHost gives host h the name a source of the job gave it (a rank that joined a live job); an
// empty name, or a host that already has this name, changes nothing. A snapshot is left as it is.
func (m *Map) NameHost(h int32, name string) {
	if m == nil || m.frozen || h < 0 || name == "" || m.names[h] == name || len(m.names) >= maxLearned {
		return
	}
	if m.names == nil {
		m.names = map[int32]string{}
	}
	m.names[h] = name
	m.snap = nil
}

// Name returns host h's name, and whether a source named it.
func (m *Map) Name(h int32) (string, bool) {
	if m == nil || h < 0 {
		return "", false
	}
	n, ok := m.names[h]
	return n, ok
}

// Label is host h as views and reports show it: its name where a source named it, else its
// number, and ? for an unknown host (h < 0).
func (m *Map) Label(h int32) string {
	if h < 0 {
		return "?"
	}
	if n, ok := m.Name(h); ok {
		return n
	}
	return strconv.Itoa(int(h))
}

// ByName returns the host named name, and whether one is: the lowest numbered where two hosts
// share a name.
func (m *Map) ByName(name string) (int32, bool) {
	if m == nil || name == "" {
		return -1, false
	}
	best, ok := int32(-1), false
	for h, n := range m.names {
		if n == name && (!ok || h < best) {
			best, ok = h, true
		}
	}
	return best, ok
}

// Names returns a copy of the hosts' names, by number.
func (m *Map) Names() map[int32]string {
	if m == nil {
		return nil
	}
	return maps.Clone(m.names)
}

// Named is how many hosts have a name.
func (m *Map) Named() int {
	if m == nil {
		return 0
	}
	return len(m.names)
}

// Host returns device d's host, and whether it is known.
func (m *Map) Host(d int32) (int32, bool) {
	if m == nil || d < 0 {
		return -1, false
	}
	if m.src == FromEvents {
		if h, ok := m.learned[d]; ok {
			return h, true
		}
	}
	if m.per > 0 && m.src != FromNone {
		return d / int32(m.per), true
	}
	return -1, false
}

// HostOr returns device d's host, or -1 when it is not known.
func (m *Map) HostOr(d int32) int32 {
	h, _ := m.Host(d)
	return h
}

// Local returns device d's index among its host's GPUs, and whether it is known: only where the
// host comes from a count of GPUs per host (d mod GPUsPerHost). A rank that named its host says
// nothing of which of the host's GPUs it drives.
func (m *Map) Local(d int32) (int32, bool) {
	if m == nil || d < 0 || m.per <= 0 || m.src == FromNone {
		return -1, false
	}
	if m.src == FromEvents {
		if _, ok := m.learned[d]; ok {
			return -1, false
		}
	}
	return d % int32(m.per), true
}

// SameHost reports whether devices a and b are on one host, and whether that is known.
func (m *Map) SameHost(a, b int32) (same, known bool) {
	if a == b && a >= 0 {
		return true, true
	}
	ha, oka := m.Host(a)
	hb, okb := m.Host(b)
	return ha == hb, oka && okb
}

// PerHost is the GPUs every host has where the map places devices by a count (a topology's or
// --gpus-per-host); 0 where they are placed by the events, or not at all.
func (m *Map) PerHost() int {
	if m == nil || m.src == FromEvents || m.src == FromNone {
		return 0
	}
	return m.per
}

// Learned is how many devices have named their host (FromEvents), and how many distinct hosts
// they named.
func (m *Map) Learned() (devices, hosts int) {
	if m == nil {
		return 0, 0
	}
	return len(m.learned), len(m.hosts)
}

// First returns the lowest device on host h, and whether the map knows one: h × GPUs per host
// where devices are placed by a count, else the lowest device that named h.
func (m *Map) First(h int32) (int32, bool) {
	if m == nil || h < 0 {
		return -1, false
	}
	first, ok := int32(-1), false
	for d, x := range m.learned {
		if x == h && (!ok || d < first) {
			first, ok = d, true
		}
	}
	if ok {
		return first, true
	}
	if p := m.PerHost(); p > 0 {
		return h * int32(p), true
	}
	return -1, false
}

// OnHost lists the devices among devs that are on host h, in devs' order.
func (m *Map) OnHost(h int32, devs []int32) []int32 {
	var out []int32
	for _, d := range devs {
		if x, ok := m.Host(d); ok && x == h {
			out = append(out, d)
		}
	}
	return out
}

// Snapshot returns a copy of the map that later Adds do not change, for other goroutines to read
// (an analysis Result's); the same copy while nothing was learned since.
func (m *Map) Snapshot() *Map {
	if m == nil {
		return nil
	}
	if m.frozen {
		return m // a snapshot's snapshot: nothing of it changes
	}
	if m.snap == nil {
		s := &Map{src: m.src, per: m.per, names: maps.Clone(m.names)}
		if m.src == FromEvents {
			s.learned, s.hosts = maps.Clone(m.learned), maps.Clone(m.hosts)
		}
		s.snap, s.frozen = s, true
		m.snap = s
	}
	return m.snap
}

// Group is one host's devices, as Layout lists them.
type Group struct {
	Host  int32   // the host; -1 for the devices whose host is unknown
	Known bool    // the host is known (Host >= 0)
	Devs  []int32 // its devices, by id
}

// Layout groups devs by host: the hosts in order of their number, each host's devices by id, and
// the devices whose host is unknown last, in one group of their own (Host -1).
func (m *Map) Layout(devs []int32) []Group {
	by := map[int32][]int32{}
	var unknown []int32
	for _, d := range devs {
		if h, ok := m.Host(d); ok {
			by[h] = append(by[h], d)
		} else {
			unknown = append(unknown, d)
		}
	}
	out := make([]Group, 0, len(by)+1)
	for h, ds := range by {
		slices.Sort(ds)
		out = append(out, Group{Host: h, Known: true, Devs: ds})
	}
	slices.SortFunc(out, func(a, b Group) int { return cmp.Compare(a.Host, b.Host) })
	if len(unknown) > 0 {
		slices.Sort(unknown)
		out = append(out, Group{Host: -1, Devs: unknown})
	}
	return out
}
