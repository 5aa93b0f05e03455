package receiver

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/xfertop/xfertop/otel"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/units"
)

// Defaults of the merger.
const (
	// DefaultReorderWait is how long a gap in a session's numbered stream (DetailFull) holds back the
	// events after it before it is given up as lost: long enough for a sender's or a Collector's retry.
	DefaultReorderWait = 5 * time.Second
	// maxReorder bounds the events held back per session waiting for a gap to fill; past it the
	// oldest gap is given up.
	maxReorder = 1 << 18
	minReorder = 1 << 12
)

// Merger turns decoded requests from any number of senders into one event stream: events get ids
// in one string table, times on one axis (ns since the first sender's epoch: each event's time is
// its wall-clock time minus that epoch), and, for senders that number their events (DetailFull),
// the order they were produced in, whatever order the requests came in. Duplicates (a request
// retried after it was taken) are dropped, gaps that do not fill within the reorder wait are
// counted as lost.
//
// It is not safe for concurrent use: one goroutine (the Listener's) calls Merge and Tick, and the
// sinks run on it.
type Merger struct {
	strs     *timeline.Strings
	onMeta   func(timeline.Meta) timeline.Sink
	sink     timeline.Sink
	wait     time.Duration
	axis     int64 // wall-clock ns of time 0; set by the first session
	hasAxis  bool
	meta     timeline.Meta
	sessions map[string]*session
	order    []*session // sessions in the order they appeared
	hostIdx  map[string]uint16
	labels   []uint32 // the request's label ids → the table's
	stats    counters
	axisSeen time.Time // when the first session came
	bytes    int64     // the bytes of the events taken, all senders together (held below maxTotalBytes)
	logf     func(reason, format string, a ...any)
	res      []resTally // per resource of the request being merged
	// otherJobs says, for each session left out as another job, which and why.
	otherJobs []string
	out       timeline.Event // the event being handed to the sink
	// names are the hosts' names as their senders gave them (host.name), by host number.
	names map[int32]string
}

// resTally is what one resource of a request brought that was taken.
type resTally struct {
	spans  int
	maxEnd int64
}

// session is one exporting process (xfertop.session).
type session struct {
	id        string
	epoch     int64
	full      bool
	meta      timeline.Meta
	next      int64 // the next seq to release
	ring      []slot
	held      int
	maxSeq    int64
	stalled   time.Time // when the stream last released or first held an event out of order
	hosts     map[string]*Host
	hostList  []*Host
	firstSeen time.Time // when its first request came
	refuse    string    // why none of its spans can be merged ("" when they can)
}

type slot struct {
	e  timeline.Event
	ok bool
}

// Host is one sender's host as the header shows it.
type Host struct {
	Name    string `json:"name"`
	Session string `json:"session"`
	Detail  string `json:"detail"`
	Spans   int64  `json:"spans"`
	// OffsetNs estimates the host's clock against this one: the smallest (receive time − newest span
	// end) over its requests. It includes the export's batching delay (up to 200 ms) and the network.
	OffsetNs int64     `json:"offset_ns"`
	LastSeen time.Time `json:"last_seen"`
}

type counters struct {
	spans, foreign, lost, dup, events, invalid int64
}

// NewMerger returns a merger that interns labels in strs. onMeta is called once, with the first
// sender's description, before the first event; it returns the sink the events go to.
func NewMerger(strs *timeline.Strings, wait time.Duration, onMeta func(timeline.Meta) timeline.Sink) *Merger {
	if wait <= 0 {
		wait = DefaultReorderWait
	}
	return &Merger{strs: strs, onMeta: onMeta, wait: wait, sessions: map[string]*session{}, hostIdx: map[string]uint16{}}
}

// SetLog gives the merger a log for the spans it leaves out; logf may drop lines (one per reason a
// second, say). Without one, they are only counted.
func (m *Merger) SetLog(logf func(reason, format string, a ...any)) { m.logf = logf }

// Meta is the first sender's description (zero before one).
func (m *Merger) Meta() timeline.Meta { return m.meta }

// Merge takes one decoded request received at now.
func (m *Merger) Merge(d *Decoded, now time.Time) {
	m.stats.foreign += d.Foreign
	if d.Foreign > 0 && m.logf != nil {
		m.logf("foreign", "ignored %s from %s that are not xfertop's (no xfertop.kind)", units.Counted(d.Foreign, "span"), d.senders())
	}
	// A tail root (the events after a sender's last step) carries no event of its own, but it is
	// one of the spans the sender built: counted, so that what was sent adds up to what was taken.
	m.stats.spans += d.Tails
	if len(d.Spans) == 0 {
		return
	}
	m.labels = m.labels[:0]
	for _, s := range d.Strings {
		m.labels = append(m.labels, m.strs.ID(s))
	}
	m.labels[0] = 0
	sess := make([]*session, len(d.Resources))
	m.res = m.res[:0]
	for i := range d.Resources {
		sess[i] = m.session(&d.Resources[i], d, i, now)
		m.res = append(m.res, resTally{maxEnd: -1 << 63})
	}
	// Unnumbered events are released at once, in the order they ended (as producers emit them),
	// a step after the ops it holds.
	var loose []int
	for i := range d.Spans {
		sp := &d.Spans[i]
		s := sess[sp.Res]
		if why := m.check(s, sp, now); why != "" {
			m.invalid(s, d.Resources[sp.Res].HostName, why)
			continue
		}
		m.bytes += sp.Event.Bytes
		t := &m.res[sp.Res]
		t.spans++
		t.maxEnd = max(t.maxEnd, sp.Event.End)
		m.stats.spans++
		sp.Event.Label = m.labels[sp.Event.Label]
		if s.full && sp.Seq >= 0 {
			m.hold(s, sp, now)
		} else {
			loose = append(loose, i)
		}
	}
	for i := range d.Resources {
		if t := m.res[i]; t.spans > 0 {
			h := sess[i].hosts[d.Resources[i].HostName]
			h.Spans += int64(t.spans)
			h.LastSeen = now
			h.OffsetNs = min(h.OffsetNs, now.UnixNano()-t.maxEnd)
		}
	}
	if len(loose) > 0 {
		sort.SliceStable(loose, func(a, b int) bool {
			x, y := &d.Spans[loose[a]].Event, &d.Spans[loose[b]].Event
			if x.End != y.End {
				return x.End < y.End
			}
			return x.Kind != timeline.KindStep && y.Kind == timeline.KindStep
		})
		for _, i := range loose {
			m.emit(sess[d.Spans[i].Res], &d.Spans[i].Event)
		}
	}
}

// session finds or starts the session of resource i.
func (m *Merger) session(r *Resource, d *Decoded, i int, now time.Time) *session {
	id := r.Session
	if id == "" {
		id = "host " + r.HostName // a sender that does not say its session: each host is one
	}
	s := m.sessions[id]
	if s == nil {
		meta := recordings.MetaFromPairs(r.Meta)
		s = &session{id: id, full: r.Detail == otel.DetailFull, meta: meta, epoch: meta.EpochUnixNs, hosts: map[string]*Host{},
			ring: make([]slot, 0), stalled: now, firstSeen: now}
		if !plausibleWall(s.epoch, now) { // not said, or not a clock's: the sender's first span says
			s.epoch = m.firstStart(d, i, now)
		}
		m.sessions[id] = s
		m.order = append(m.order, s)
		if m.hasAxis {
			s.refuse = m.refuseSession(s, now)
			if s.refuse == "" {
				m.otherJob(s, m.otherRun(s))
			}
		} else {
			m.axis, m.hasAxis, m.axisSeen = s.epoch, true, now
			m.meta = meta
			m.meta.EpochUnixNs = s.epoch
			if m.onMeta != nil {
				m.sink = m.onMeta(m.meta)
			}
		}
	}
	h := s.hosts[r.HostName]
	if h == nil {
		if s.refuse == "" {
			m.otherJob(s, m.hostTaken(s, r.HostName))
		}
		h = &Host{Name: r.HostName, Session: id, Detail: r.Detail, OffsetNs: 1<<63 - 1}
		s.hosts[r.HostName] = h
		s.hostList = append(s.hostList, h)
	}
	num := r.Host
	if r.Host < 0 { // hosts that do not say their index get one each, in the order they appear
		idx, ok := m.hostIdx[r.HostName]
		if !ok {
			idx = uint16(len(m.hostIdx))
			m.hostIdx[r.HostName] = idx
		}
		for j := range d.Spans {
			if d.Spans[j].Res == int32(i) {
				d.Spans[j].Event.Host = idx
			}
		}
		num = int(idx)
	}
	if s.refuse == "" {
		m.nameHost(int32(num), r.HostName)
	}
	return s
}

// nameHost gives host h the name its sender gave it (host.name), the first one given: in the
// description (timeline.HostNameKey) and to the sink that takes names (timeline.HostNamer), before
// the host's first event. The name an xfertop sender makes up for a host of no name (host-N, its
// own number) is no name.
func (m *Merger) nameHost(h int32, name string) {
	if h < 0 || name == "" || name == fmt.Sprintf("host-%d", h) {
		return
	}
	if _, ok := m.names[h]; ok {
		return
	}
	if m.names == nil {
		m.names = map[int32]string{}
	}
	m.names[h] = name
	m.meta.Extra = maps.Clone(m.meta.Extra)
	if m.meta.Extra == nil {
		m.meta.Extra = map[string]string{}
	}
	m.meta.Extra[timeline.HostNameKey(h)] = name
	if n, ok := m.sink.(timeline.HostNamer); ok {
		n.NameHost(h, name)
	}
}

// otherRun says how session s's run differs from the first sender's (its scenario or seed: the
// run's identity), "" when it does not or either does not say.
func (m *Merger) otherRun(s *session) string {
	a, b := m.meta, s.meta
	if a.Scenario == "" || b.Scenario == "" || a.Scenario == b.Scenario && a.Seed == b.Seed {
		return ""
	}
	return fmt.Sprintf("it ran %s seed %d, the first job %s seed %d", b.Scenario, b.Seed, a.Scenario, a.Seed)
}

// hostTaken says which session already sent host (""  when none other did): the processes of one
// job each send their own hosts, so a second sender of a host is another job on the same GPUs (a
// run after the first, into the same listener).
func (m *Merger) hostTaken(s *session, host string) string {
	for _, o := range m.order {
		if o != s && o.refuse == "" && o.hosts[host] != nil {
			return fmt.Sprintf("it sends %s, which session %s sent", host, o.id)
		}
	}
	return ""
}

// otherJob leaves session s out as another job, for why ("" leaves it in): its spans would mix a
// second job's steps into the first's figures. It is said in the report, the console and the log.
func (m *Merger) otherJob(s *session, why string) {
	if why == "" {
		return
	}
	s.refuse = "another job: " + why
	msg := fmt.Sprintf("session %s is another job (%s): its spans are left out; listen analyses one job, start it afresh for the next", s.id, why)
	m.otherJobs = append(m.otherJobs, msg)
	if m.logf != nil {
		m.logf("job", "%s", msg)
	}
}

// firstStart is the earliest start of resource i's spans that can be a clock's; the receive time
// when none can.
func (m *Merger) firstStart(d *Decoded, i int, now time.Time) int64 {
	first := int64(1<<63 - 1)
	for j := range d.Spans {
		if t := d.Spans[j].Event.Start; d.Spans[j].Res == int32(i) && plausibleWall(t, now) {
			first = min(first, t)
		}
	}
	if first == 1<<63-1 {
		return now.UnixNano()
	}
	return first
}

// hold places a numbered event in its session's reorder ring and releases what is in order.
func (m *Merger) hold(s *session, sp *Span, now time.Time) {
	if sp.Seq < s.next {
		m.stats.dup++ // already released, or given up as lost
		return
	}
	if sp.Seq == s.next && s.held == 0 {
		// The next in order with nothing held: released at once, without a trip through the ring
		// (a Collector forwards each sender's spans in order; the ring's slots are 96 bytes each).
		m.emit(s, &sp.Event)
		s.next++
		s.maxSeq = max(s.maxSeq, sp.Seq)
		s.stalled = now
		return
	}
	for sp.Seq-s.next >= int64(len(s.ring)) {
		if len(s.ring) < maxReorder {
			s.grow()
			continue
		}
		if s.held == 0 { // nothing held: the events before this one are far behind, counted lost
			jump := sp.Seq - s.next - int64(len(s.ring)) + 1
			s.next += jump
			m.stats.lost = satAdd(m.stats.lost, jump)
			continue
		}
		m.skip(s) // too many events wait for the oldest gap: give it up
	}
	i := sp.Seq & int64(len(s.ring)-1)
	if s.ring[i].ok {
		m.stats.dup++
		return
	}
	if s.held == 0 {
		s.stalled = now
	}
	s.ring[i] = slot{e: sp.Event, ok: true}
	s.held++
	s.maxSeq = max(s.maxSeq, sp.Seq)
	m.release(s, now)
}

// grow doubles the ring, keeping each held event at its seq's new position. Every held seq lies
// in [next, next+len(ring)), so walking those seqs finds each once.
func (s *session) grow() {
	n := max(minReorder, 2*len(s.ring))
	ring := make([]slot, n)
	old := int64(len(s.ring))
	for seq := s.next; seq < s.next+old; seq++ {
		if sl := s.ring[seq&(old-1)]; sl.ok {
			ring[seq&int64(n-1)] = sl
		}
	}
	s.ring = ring
}

// release emits the events from next on while they are there.
func (m *Merger) release(s *session, now time.Time) {
	mask := int64(len(s.ring) - 1)
	moved := false
	for s.held > 0 {
		sl := &s.ring[s.next&mask]
		if !sl.ok {
			break
		}
		m.emit(s, &sl.e)
		*sl = slot{}
		s.held--
		s.next++
		moved = true
	}
	if moved {
		s.stalled = now
	}
}

// skip gives up the gap at next: the events missing there are counted lost, and the stream goes on
// from the next event held.
func (m *Merger) skip(s *session) {
	mask := int64(len(s.ring) - 1)
	for s.held > 0 && !s.ring[s.next&mask].ok {
		s.next++
		m.stats.lost++
	}
	m.release(s, time.Time{})
}

// Tick gives up gaps that have held events back for longer than the reorder wait.
func (m *Merger) Tick(now time.Time) {
	for _, s := range m.order {
		if s.held > 0 && now.Sub(s.stalled) >= m.wait {
			m.skip(s)
			s.stalled = now
		}
	}
}

// Flush releases everything held (the end of a listen): remaining gaps are counted as lost.
func (m *Merger) Flush() {
	for _, s := range m.order {
		for s.held > 0 {
			m.skip(s)
		}
	}
}

// emit hands e, placed on the merger's time axis, to the sink. The sink is given the merger's own
// copy (a Sink does not retain the pointer): handing it &e made every event escape to the heap,
// an allocation an event.
func (m *Merger) emit(s *session, e *timeline.Event) {
	m.out = *e
	out := &m.out
	out.Start -= m.axis
	out.End -= m.axis
	if out.Queued != 0 {
		out.Queued += s.epoch - m.axis
	}
	m.stats.events++
	if m.sink != nil {
		m.sink.Emit(out)
	}
}

// Stats is what the merger has seen.
type Stats struct {
	Hosts   []Host `json:"hosts"`
	Spans   int64  `json:"spans"`   // xfertop spans taken (tail roots included: no event of their own)
	Events  int64  `json:"events"`  // events released to the console or the report
	Foreign int64  `json:"foreign"` // spans that are not xfertop's, ignored
	// Lost counts numbered events that never came (gaps given up after the reorder wait, or at the
	// end); Duplicates, events that came twice (a retried request) or after their gap was given up.
	Lost       int64 `json:"lost"`
	Duplicates int64 `json:"duplicates"`
	Held       int64 `json:"held"` // events waiting for a gap before them to fill
	// Invalid counts spans left out because what they say cannot be (times outside their sender's
	// window, a sequence number past its plausible range, a size of no transfer): see check.
	Invalid int64 `json:"invalid"`
	// Partial names what the senders left out (DetailSpans): the parts of the analysis that are
	// then incomplete.
	Partial []string `json:"partial,omitempty"`
	// OtherJobs names the sessions left out as another job than the first sender's (they sent a
	// host another session sent, or ran another scenario or seed), and why; their spans count as
	// Invalid, their hosts are not in Hosts.
	OtherJobs []string `json:"other_jobs,omitempty"`
}

// Stats returns the merger's counters.
func (m *Merger) Stats() Stats {
	st := Stats{Spans: m.stats.spans, Events: m.stats.events, Foreign: m.stats.foreign, Lost: m.stats.lost, Duplicates: m.stats.dup, Invalid: m.stats.invalid}
	partial := false
	st.OtherJobs = slices.Clone(m.otherJobs)
	for _, s := range m.order {
		st.Held += int64(s.held)
		if strings.HasPrefix(s.refuse, "another job") {
			continue // not this report's: OtherJobs names it
		}
		for _, h := range s.hostList {
			st.Hosts = append(st.Hosts, *h)
		}
		partial = partial || !s.full
	}
	if partial {
		st.Partial = slices.Clone(PartialSpans)
	}
	return st
}

// PartialSpans lists what a report made from DetailSpans senders lacks, section by section.
var PartialSpans = []string{
	"events: only the spans' events (no kernels, waits, samples, cache hits, promises, buffers or marks)",
	"steps: steps may be sampled (--otlp-sample) or skipped by the span budget (--otlp-max-rate)",
	"idle and overlap: without kernels and wait events, busy time and gap causes are incomplete",
	"comm_cache: hits and evictions are not exported",
	"groups: ops are not tied to their group",
	"alerts, telemetry: not exported",
	"transfers, collectives: spans shorter than --otlp-min-span are left out",
}

// HostNames lists the hosts seen, "name" or "name (session)" when names repeat.
func (st Stats) HostNames() string {
	names := make([]string, 0, len(st.Hosts))
	for _, h := range st.Hosts {
		names = append(names, h.Name)
	}
	return strings.Join(names, ", ")
}
