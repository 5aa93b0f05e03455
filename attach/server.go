package attach

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xfertop/xfertop/join"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// Config says where to listen and how to watch.
type Config struct {
	Addr Addr
	// Epoch is the wall-clock time (Unix ns) of session time 0; now when 0. Each rank's clock is
	// placed on it by the rank's own wall-clock epoch.
	Epoch int64
	// Strings is the session's string table the server interns labels into (a new one when nil).
	// Give it when a sink needs it before Start (a recorder).
	Strings *timeline.Strings
	// Queue is how many blocks of events may wait for the merger (64 when 0). When it is full the
	// connections' readers wait, the sockets fill, and the plugins drop and count.
	Queue int
}

// Rank is one connected (or departed) process of the job, as its plugin described itself.
type Rank struct {
	Conn      int // connection number, from 1
	Host      string
	Pid       int
	Rank      int // the job's rank (RANK), or its rank in its first communicator
	Comms     []string
	Connected bool
	Events    int64
	Dropped   int64 // events the process dropped before they reached the console
	Torn      int64 // bytes of a last chunk lost when its connection ended mid-chunk
	Err       string
	Since     time.Time
}

// Server accepts rank connections and merges their streams into one session event stream: times
// aligned on each process's wall clock, labels, streams and groups renumbered, hosts indexed, send
// and receive peers and collective roots translated from communicator ranks to job ranks. A
// collective posted by some ranks and not the others is, on those that posted it, a wait for their
// peers: in flight while the job runs (InFlight), and handed to the sinks as waits ended with the
// job when the session closes with it still open; the diagnosis (analysis/diagnosis) judges a hang
// from them. It hands every event to its sinks on one goroutine.
type Server struct {
	cfg   Config
	l     net.Listener
	sinks []timeline.Sink
	strs  *timeline.Strings
	in    chan block
	wg    sync.WaitGroup
	done  chan struct{}
	stop  context.CancelFunc

	mu        sync.Mutex
	ranks     []*Rank
	conns     map[net.Conn]struct{}
	open      int
	lastOpen  time.Time
	epoch     int64 // wall-clock ns of session time 0
	meta      timeline.Meta
	hostNames []string // by host number, as the join indexed the hosts the ranks named
	dropped   atomic.Int64
	events    atomic.Int64

	join    *join.Join // the merger goroutine's only
	running published  // the join's collectives in flight, for InFlight
}

// block is what a connection's reader hands the merger.
type block struct {
	conn    *connState
	events  []timeline.Event
	strings []string // entries First… of the connection's table that arrived with this block
	meta    *recordings.Meta
	dropped int64 // the connection's total so far
	end     bool
	torn    int64
	err     error
}

type connState struct {
	rank    *Rank
	member  *join.Member
	dropped int64
}

// Start listens on cfg.Addr and merges connections into sinks until Close or ctx ends.
func Start(ctx context.Context, cfg Config, sinks ...timeline.Sink) (*Server, error) {
	if cfg.Queue <= 0 {
		cfg.Queue = 64
	}
	if cfg.Strings == nil {
		cfg.Strings = timeline.NewStrings()
	}
	if cfg.Epoch == 0 {
		cfg.Epoch = time.Now().UnixNano()
	}
	l, err := Listen(cfg.Addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Server{cfg: cfg, l: l, sinks: sinks, strs: cfg.Strings, in: make(chan block, cfg.Queue), done: make(chan struct{}),
		stop: cancel, conns: map[net.Conn]struct{}{}, lastOpen: time.Now()}
	s.join = join.New(join.Config{Strings: cfg.Strings, Epoch: cfg.Epoch,
		Clock: func(*timeline.Event) int64 { return time.Now().UnixNano() - cfg.Epoch }})
	s.meta = timeline.Meta{Source: "attach " + cfg.Addr.String(), Backend: "nccl", Topology: "unknown", IdleMode: timeline.IdleEngine,
		Writer: "xfertop attach", EpochUnixNs: cfg.Epoch}
	s.epoch = cfg.Epoch
	s.wg.Add(1)
	go s.accept(ctx)
	go s.merge(ctx)
	go func() {
		<-ctx.Done()
		s.l.Close()
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
	}()
	return s, nil
}

// Strings is the session's string table. It belongs to the merger goroutine: a sink reads it only
// inside Emit (as timeline.Window and recordings.Recorder do).
func (s *Server) Strings() *timeline.Strings { return s.strs }

// Addr is where the server listens.
func (s *Server) Addr() Addr { return s.cfg.Addr }

// Meta describes the session: its devices grow as ranks connect.
func (s *Server) Meta() timeline.Meta {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.meta
	return m
}

// HostNames returns the names of the hosts the ranks named so far, by the number their events
// carry ("" for a rank that named none).
func (s *Server) HostNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hostNames // never written again: hello replaces it
}

// Ranks returns every process that has connected, in connection order.
func (s *Server) Ranks() []Rank {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Rank, len(s.ranks))
	for i, r := range s.ranks {
		out[i] = *r
		out[i].Comms = slices.Clone(r.Comms)
	}
	return out
}

// Dropped returns the events the ranks reported dropped (a slow or absent console) so far.
func (s *Server) Dropped() int64 { return s.dropped.Load() }

// Events returns the events merged so far.
func (s *Server) Events() int64 { return s.events.Load() }

// Quiet reports whether at least one rank has connected and none has been connected for d: the job
// has ended.
func (s *Server) Quiet(d time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ranks) > 0 && s.open == 0 && time.Since(s.lastOpen) >= d
}

// Close stops listening, ends every connection, and waits until everything read has reached the sinks.
func (s *Server) Close() {
	s.stop()
	<-s.done
	if s.cfg.Addr.Network == "unix" {
		_ = removeSocket(s.cfg.Addr.Address)
	}
}

func (s *Server) accept(ctx context.Context) {
	defer s.wg.Done()
	n := 0
	for {
		c, err := s.l.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		n++
		r := &Rank{Conn: n, Rank: -1, Connected: true, Since: time.Now()}
		s.mu.Lock()
		s.ranks = append(s.ranks, r)
		s.conns[c] = struct{}{}
		s.open++
		s.mu.Unlock()
		s.wg.Add(1)
		go s.read(c, &connState{rank: r})
	}
}

// read decodes one connection, handing blocks to the merger (waiting when it is behind).
func (s *Server) read(c net.Conn, cs *connState) {
	defer s.wg.Done()
	defer func() {
		c.Close()
		s.mu.Lock()
		delete(s.conns, c)
		s.open--
		s.lastOpen = time.Now()
		s.mu.Unlock()
	}()
	name := fmt.Sprintf("rank connection %d", cs.rank.Conn)
	sr, err := recordings.NewStreamReader(name, c)
	if err != nil {
		s.in <- block{conn: cs, end: true, err: err}
		return
	}
	known := 1
	sentMeta := false
	for sr.Next() {
		b := block{conn: cs, events: slices.Clone(sr.At()), dropped: sr.Dropped()}
		if all := sr.Strings().All(); len(all) > known {
			b.strings = slices.Clone(all[known:])
			known = len(all)
		}
		if m, ok := sr.Meta(); ok && !sentMeta {
			b.meta, sentMeta = &m, true
		}
		s.in <- b
	}
	b := block{conn: cs, end: true, dropped: sr.Dropped(), torn: sr.Torn(), err: sr.Err()}
	if m, ok := sr.Meta(); ok && !sentMeta {
		b.meta = &m
	}
	s.in <- b
}

// merge is the one goroutine that emits to the sinks.
func (s *Server) merge(ctx context.Context) {
	defer close(s.done)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	finished := make(chan struct{})
	go func() {
		<-ctx.Done()
		s.wg.Wait() // every reader has handed over its last block
		close(finished)
	}()
	for {
		select {
		case b := <-s.in:
			s.apply(b)
		case <-tick.C:
			s.publishRunning(time.Now().UnixNano() - s.epoch)
		case <-finished:
			for {
				select {
				case b := <-s.in:
					s.apply(b)
				default:
					s.endWaits(time.Now().UnixNano() - s.epoch)
					return
				}
			}
		}
	}
}

func (s *Server) apply(b block) {
	cs := b.conn
	if b.meta != nil {
		s.hello(cs, b.meta)
	}
	if cs.member == nil { // a stream without meta: its clock and rank are not known
		cs.member, _ = s.join.Add(fmt.Sprintf("rank connection %d", cs.rank.Conn), &recordings.Meta{EpochUnixNs: s.epoch})
	}
	s.join.AddStrings(cs.member, b.strings)
	if d := b.dropped - cs.dropped; d > 0 {
		s.dropped.Add(d)
		cs.dropped = b.dropped
	}
	for i := range b.events {
		s.emit(cs, &b.events[i])
	}
	if b.end {
		s.join.Ended(cs.member)
	}
	s.publishRunning(time.Now().UnixNano() - s.epoch)
	s.mu.Lock()
	cs.rank.Events += int64(len(b.events))
	cs.rank.Dropped = cs.dropped
	if b.end {
		cs.rank.Connected, cs.rank.Torn = false, b.torn
		if b.err != nil {
			cs.rank.Err = b.err.Error()
		}
	}
	s.mu.Unlock()
}

// hello takes a connection's description: its host, process, rank, and its clock's epoch.
func (s *Server) hello(cs *connState, m *recordings.Meta) {
	known := len(s.join.HostNames())
	mb, err := s.join.Add(fmt.Sprintf("rank connection %d", cs.rank.Conn), m)
	cs.member = mb
	names := s.join.HostNames()
	for h := known; h < len(names); h++ { // a host no rank named before: its name, before its events
		if names[h] == "" {
			continue
		}
		for _, k := range s.sinks {
			if n, ok := k.(timeline.HostNamer); ok {
				n.NameHost(int32(h), names[h])
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(names) > known {
		s.hostNames = names
		s.meta.Extra = maps.Clone(s.meta.Extra) // Meta hands the map out: a new one, not written again
		if s.meta.Extra == nil {
			s.meta.Extra = map[string]string{}
		}
		s.join.NameHosts(s.meta.Extra)
	}
	r := cs.rank
	r.Host, r.Pid = mb.Host, mb.Pid
	if mb.Rank >= 0 {
		r.Rank = mb.Rank
	}
	if err != nil {
		r.Err = err.Error() // merged all the same: the job is live
	}
}

func (s *Server) emit(cs *connState, e *timeline.Event) {
	if !s.join.Event(cs.member, e) {
		return // hang detection's input, not an event of the job
	}
	if e.Kind == timeline.KindCommInit {
		s.mu.Lock()
		cs.rank.Comms = append(cs.rank.Comms, s.strs.Lookup(e.Label))
		if cs.rank.Rank < 0 {
			cs.rank.Rank = int(e.Device)
		}
		s.meta.Devices = max(s.meta.Devices, int(e.Device)+1)
		s.mu.Unlock()
	}
	s.events.Add(1)
	for _, k := range s.sinks {
		k.Emit(e)
	}
}

// endWaits hands the sinks, as the session ends at now (session ns), the waits of the ranks that
// posted a collective its other ranks never posted: they waited until the end (status timeout).
func (s *Server) endWaits(now int64) {
	for _, e := range s.join.Waits(nil, now, timeline.StatusTimeout) {
		s.events.Add(1)
		for _, k := range s.sinks {
			k.Emit(&e)
		}
	}
}
