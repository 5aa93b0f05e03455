package session

import (
	"container/heap"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// maxKept bounds the ops ahead kept as under way or about to be: 64 Ki events, 5 MiB. More than
// that many ops running at once at the position are not all drawn (counted in ahead.lost).
const maxKept = 1 << 16

// ahead tells which ops are under way at a console replay's position. A recording holds each op
// once, with its start and end, in the order its producer reported them: by end (the simulator
// and the cuda backend report an op when it ends) or by start (the trace importers). The replay
// reads an op once the position reaches its start and holds it until its end (player.held), so an
// op under way at the position (start ≤ position < end) is held, or not read yet: in the rest of
// the chunk being read, or in a chunk further on (in a recording by end, a long op comes after
// every op that ended while it ran). The index's least start of each chunk tells which chunks
// further on hold an op started by the position, so only those are decoded, each once: ahead
// keeps their ops that start before the replay can reach their chunk (the largest end of the
// chunks before it bounds every start there) and drops them once the replay reads that chunk
// itself. Without an index (a recording not closed) only the chunk being read is looked at.
//
// All of it runs on the replay's goroutine; what it finds is published to the console through run.
type ahead struct {
	r       *recordings.Reader
	run     *runningSet
	chunks  chunkHeap // events chunks after the one being read, not yet decoded, least start first
	indexed int       // index entries pushed so far (a growing recording's index grows)
	reach   int64     // the largest end of the entries pushed so far
	kept    []keptOp  // ops of chunks ahead that start before the replay reaches their chunk
	lost    int       // ops left out of kept (over maxKept)
	cur     int64     // offset of the chunk being read
	scratch []timeline.Event
	pub     []timeline.Event // what the last publish found, handed to run (copied there)

	published  bool
	pubChunk   int64 // the chunk being read at the last publish
	pubAt      int64 // the position then
	pubHorizon int64
}

// keptOp is an op of a chunk ahead, and where that chunk is.
type keptOp struct {
	ev    timeline.Event
	chunk int64
}

// chunkRef is an events chunk ahead: where it is, its least start, and the largest end before it.
type chunkRef struct {
	entry recordings.IndexEntry
	reach int64 // the largest end of every chunk before it: the replay reads the chunk by then
}

type chunkHeap []chunkRef

func (h chunkHeap) Len() int           { return len(h) }
func (h chunkHeap) Less(i, j int) bool { return h[i].entry.MinStart < h[j].entry.MinStart }
func (h chunkHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *chunkHeap) Push(x any)        { *h = append(*h, x.(chunkRef)) }
func (h *chunkHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// newAhead looks ahead in r for the ops under way, publishing them to run.
func newAhead(r *recordings.Reader, run *runningSet) *ahead {
	return &ahead{r: r, run: run, cur: -1}
}

// playing tells that the replay now reads the chunk at off: the ops kept from it and from the
// chunks before it are the replay's own from now on.
func (a *ahead) playing(off int64) {
	a.cur = off
	k := a.kept[:0]
	for _, o := range a.kept {
		if o.chunk > off {
			k = append(k, o)
		}
	}
	a.kept = k
}

// grow pushes the index entries not seen yet (all of them at first; a growing recording's new ones).
func (a *ahead) grow() {
	idx := a.r.Index()
	for ; a.indexed < len(idx); a.indexed++ {
		e := idx[a.indexed]
		if e.Type != recordings.ChunkEvents && e.Type != recordings.ChunkEventsZstd {
			continue
		}
		heap.Push(&a.chunks, chunkRef{entry: e, reach: a.reach})
		a.reach = max(a.reach, e.MaxEnd)
	}
}

// scout decodes the chunks ahead whose least start is at or before horizon, keeping their ops that
// start before the replay reaches them and end after at.
func (a *ahead) scout(at, horizon int64) {
	a.grow()
	for len(a.chunks) > 0 && a.chunks[0].entry.MinStart <= horizon {
		c := heap.Pop(&a.chunks).(chunkRef)
		if c.entry.Offset <= a.cur {
			continue // read already, or being read
		}
		var err error
		if a.scratch, err = a.r.EventsAt(c.entry, a.scratch[:0]); err != nil {
			continue // damaged: the replay reports it (or skips it, salvaging) when it gets there
		}
		for i := range a.scratch {
			e := &a.scratch[i]
			if e.Start >= c.reach || e.End <= at || !running(e) {
				continue // the replay reads it itself, it has ended, or it is never drawn running
			}
			if len(a.kept) >= maxKept {
				a.lost++
				continue
			}
			a.kept = append(a.kept, keptOp{ev: *e, chunk: c.entry.Offset})
		}
	}
}

// publish tells run which ops are under way at at, and which will be until horizon: the ops read
// and held until their end (held), those not read yet (rest, the chunk being read from the next op to
// read) and those kept from chunks ahead, that start by horizon and end after at (pace.At). The pace
// lets the console move the position on from at, up to horizon, between publishes.
func (a *ahead) publish(rest, held []timeline.Event, pace timeline.Pace, horizon int64) {
	at := pace.At
	a.scout(at, horizon)
	a.pub = a.pub[:0]
	for _, evs := range [2][]timeline.Event{held, rest} {
		for i := range evs {
			if e := &evs[i]; e.Start <= horizon && e.End > at && running(e) {
				a.pub = append(a.pub, *e)
			}
		}
	}
	k := a.kept[:0]
	for _, o := range a.kept {
		if o.ev.End <= at {
			continue // ended: the replay emits it when it gets there
		}
		k = append(k, o)
		if o.ev.Start <= horizon {
			a.pub = append(a.pub, o.ev)
		}
	}
	a.kept = k
	a.run.store(a.pub, pace, horizon)
	a.published, a.pubChunk, a.pubAt, a.pubHorizon = true, a.cur, at, horizon
}

// running reports whether e is reported running while it lasts, as a live backend reports it: time
// a stream spends on an op or a wait, and a host's communicator init or sleep (not instants or
// steps).
func running(e *timeline.Event) bool {
	// A host's communicator init or sleep is under way too, as a live simulation reports it: it
	// moves the console's position on while no stream has anything running.
	return e.End > e.Start && (e.OnStream() || e.Kind == timeline.KindCommInit || (e.Kind == timeline.KindMark && e.Device >= 0))
}

// stale reports whether what was published no longer says what is under way at the position at:
// the replay reads another chunk, or the position is past half the horizon (the other half is the
// margin for the replay's sleep).
func (a *ahead) stale(at int64) bool {
	return !a.published || a.pubChunk != a.cur || at >= a.pubHorizon-(a.pubHorizon-a.pubAt)/2
}

// runningSet is the ops under way at a replay's position as last published, read by the console.
// The position moves on with the wall clock from where it was published, up to the horizon the
// replay published it for (the replay publishes again before it gets there).
type runningSet struct {
	clock Clock

	mu      sync.Mutex
	evs     []timeline.Event
	pace    timeline.Pace // the position when published, and how it moves on
	horizon int64
	// want: the console asked since the last publish (a replay as fast as possible publishes on
	// demand). Atomic: the replay looks at it for every op.
	want atomic.Bool
}

// store publishes evs (copied) as what is under way from pace.At to horizon.
func (s *runningSet) store(evs []timeline.Event, pace timeline.Pace, horizon int64) {
	s.mu.Lock()
	s.evs = append(s.evs[:0], evs...)
	s.pace, s.horizon = pace, max(horizon, pace.At)
	s.want.Store(false)
	s.mu.Unlock()
}

// clear publishes that nothing runs (a replay that ended, or sought).
func (s *runningSet) clear() { s.store(nil, timeline.Pace{}, 0) }

// wanted reports whether the console asked for the ops under way since the last publish.
func (s *runningSet) wanted() bool { return s.want.Load() }

// inFlight appends the ops under way at the position now, each with End set to it.
func (s *runningSet) inFlight(dst []timeline.Event) []timeline.Event {
	s.want.Store(true)
	s.mu.Lock()
	defer s.mu.Unlock()
	pos := min(s.pace.Position(s.clock.Now()), s.horizon)
	for i := range s.evs {
		if e := s.evs[i]; e.Start <= pos && e.End > pos {
			e.End = pos
			dst = append(dst, e)
		}
	}
	return dst
}

// Clock is the wall clock a replay is paced by: the real one, unless a test sets its own.
type Clock interface {
	Now() time.Time
	// Timer returns a channel that receives the time once d has passed, and the function that
	// stops the timer.
	Timer(d time.Duration) (<-chan time.Time, func())
}

// wallClock is the real clock.
type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }
func (wallClock) Timer(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}
