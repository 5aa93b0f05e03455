package session

import (
	"context"
	"math"
	"time"

	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// playOpts is what a console's replay adds to the headless one.
type playOpts struct {
	// seek: a time received stops the replay, which returns it as next.
	seek <-chan int64
	// paced wakes a replay that sleeps when the speed changes, so that the position where the
	// change came is kept.
	paced <-chan struct{}
	// follow, when set, waits at the end of what the reader holds of a recording still being
	// written and reports whether the reader grew; when not, it returns the time of a seek received
	// meanwhile, or -1 at the recording's end or when ctx is done.
	follow func(ctx context.Context, seek <-chan int64) (next int64, grew bool)
	// running, when set, is told the ops under way at the position as the replay goes (see ahead),
	// and cleared when play returns.
	running *runningSet
	clock   Clock // nil: the wall clock
}

// Pacing of a replay: it sleeps at least minSleep (so that ops close together are emitted
// together, never before the position reaches their ends) and at most sleepSlice at a time (so it
// notices a new speed and a seek), and publishes the ops under way for horizonWall of wall time ahead (twice the slice, so
// the console's position moves on smoothly until the replay publishes again).
const (
	minSleep    = time.Millisecond
	sleepSlice  = 50 * time.Millisecond
	horizonWall = 2 * sleepSlice
)

// play emits a recording's events that end at or after from; from ≤ 0 is the recording's
// beginning, and emits every event, those before time 0 too: a recording's time 0 is when the
// session that made it started, and a source may report what happened before (attach to a job
// already running, a rank whose host clock is behind the console's). Paced, the position moves at speed()
// simulated seconds per wall second (re-read as it changes, from where the position is), and an
// event is emitted once the position reaches its end. As fast as possible (speed 0) the events go
// out in the order the recording holds them, and the position is the latest end emitted. next is
// the time of a seek received (o.seek), or -1 when the recording ends or ctx is done. It is the one
// replay loop: the headless replay and the console's replay use it.
//
// A recording holds ops in the order its producer reported them: by end (the simulator, the cuda
// backend) or by start (the trace importers). The headless replay emits them in that order, each
// once the position has reached its end and every event before it was emitted, so an op that ended
// behind a longer one that started before it waits for that one. The console's replay
// (o.running set) emits each at its own end instead: it reads an op from the recording once the
// position reaches its start and holds it until its end, in a heap by end (the ops under way:
// bounded by how many run at once), and tells o.running what is under way (see ahead).
func play(ctx context.Context, r *recordings.Reader, from int64, speed func() float64, emit func(*timeline.Event), o playOpts) (next int64, err error) {
	p := newPlayer(r, from, speed, emit, o)
	if o.running != nil {
		defer o.running.clear()
	}
	return p.run(ctx)
}

// player is the state of one play.
type player struct {
	r     *recordings.Reader
	skip  int64 // events that end before it are not emitted: from when it is > 0, else none
	speed func() float64
	emit  func(*timeline.Event)
	o     playOpts
	clk   Clock
	look  *ahead      // nil: the headless replay
	held  pendingHeap // read, started, not yet ended (the console's replay)
	seq   uint64      // events read, to keep the recording's order among equal ends

	evs          []timeline.Event // the chunk being read
	i            int              // the next event of evs to read
	eof          bool
	pace         timeline.Pace // the pace in force (at speed 0, the position is last)
	last         int64         // the latest end emitted
	chunkChanged bool
}

func newPlayer(r *recordings.Reader, from int64, speed func() float64, emit func(*timeline.Event), o playOpts) *player {
	p := &player{r: r, skip: math.MinInt64, speed: speed, emit: emit, o: o, clk: o.clock}
	if p.clk == nil {
		p.clk = wallClock{}
	}
	if from > 0 {
		p.skip = from
		r.SeekTime(from)
	}
	if o.running != nil {
		p.look = newAhead(r, o.running)
	}
	p.pace, p.last = timeline.Pace{Wall: p.clk.Now(), At: from, Speed: speed()}, from
	return p
}

// position is where the replay is at wall time t.
func (p *player) position(t time.Time) int64 {
	if p.pace.Speed <= 0 {
		return p.last
	}
	return p.pace.Position(t)
}

// publish tells the console what is under way at wall time t.
func (p *player) publish(t time.Time) {
	pos := p.position(t)
	var rest []timeline.Event
	if p.i < len(p.evs) {
		rest = p.evs[p.i:]
	}
	p.look.publish(rest, p.held.evs(), timeline.Pace{Wall: t, At: pos, Speed: p.pace.Speed}, pos+int64(float64(horizonWall)*max(p.pace.Speed, 0)))
}

// out emits e.
func (p *player) out(e *timeline.Event) {
	p.emit(e)
	p.last = max(p.last, e.End)
}

// peek returns the next event to read, reading chunks as needed; nil at the end of what the
// recording holds (eof is then set unless more may come: a recording still being written, once the
// events held are emitted). next >= 0 is a seek that came meanwhile.
func (p *player) peek(ctx context.Context) (e *timeline.Event, next int64, err error) {
	for {
		for p.i < len(p.evs) {
			if e := &p.evs[p.i]; e.End >= p.skip {
				return e, -1, nil
			}
			p.i++
		}
		if p.eof {
			return nil, -1, nil
		}
		if p.chunkChanged {
			// Between chunks: a seek or the end of the session stops the replay here too.
			p.chunkChanged = false
			select {
			case <-ctx.Done():
				return nil, -1, ctx.Err()
			case t := <-p.o.seek:
				return nil, t, nil
			default:
			}
		}
		if p.r.Next() {
			p.evs, p.i, p.chunkChanged = p.r.At(), 0, true
			if p.look != nil {
				p.look.playing(p.r.ChunkOffset())
			}
			continue
		}
		p.evs, p.i = nil, 0
		if p.o.follow == nil || p.r.Err() != nil || p.held.Len() > 0 {
			// The end, or the ops held are to be emitted first (then the replay follows on).
			p.eof = p.o.follow == nil || p.r.Err() != nil
			return nil, -1, nil
		}
		if p.look != nil {
			p.publish(p.clk.Now()) // what runs while the replay waits for more to be written
		}
		next, grew := p.o.follow(ctx, p.o.seek)
		switch {
		case grew:
		case ctx.Err() != nil:
			return nil, -1, ctx.Err()
		case next >= 0:
			return nil, next, nil
		default:
			p.eof = true
		}
	}
}

func (p *player) run(ctx context.Context) (int64, error) {
	// The wall clock is read once a wake-up: everything due by then goes out before the next sleep.
	var t time.Time
	woke := true
	for {
		if now := p.speed(); now != p.pace.Speed {
			// The pace changed: the position stays where it is and moves on at the new pace.
			t = p.clk.Now()
			p.pace = timeline.Pace{Wall: t, At: p.position(t), Speed: now}
			if p.look != nil {
				p.publish(t)
			}
		}
		e, next, err := p.peek(ctx)
		if err != nil || next >= 0 {
			return next, err
		}
		if e == nil && p.held.Len() == 0 {
			if p.eof {
				return -1, p.r.Err()
			}
			continue // the recording grew (or its follower has more to say)
		}
		if p.pace.Speed <= 0 {
			// As fast as possible: what is held first, then the recording's order.
			if p.held.Len() > 0 {
				p.out(p.held.pop())
				continue
			}
			if p.look != nil && p.o.running.wanted() {
				p.publish(time.Time{})
			}
			p.out(e)
			p.i++
			continue
		}
		if woke {
			t, woke = p.clk.Now(), false
		}
		pos := p.position(t)
		var due int64 // when something is next to do
		switch {
		case p.held.Len() > 0 && p.held.top().End <= pos:
			p.out(p.held.pop())
			continue
		case p.look == nil && e.End <= pos:
			p.out(e) // the headless replay: in the recording's order
			p.i++
			continue
		case p.look != nil && e != nil && e.Start <= pos:
			p.held.push(e, p.seq) // under way: emitted at its end
			p.seq++
			p.i++
			continue
		case p.look == nil:
			due = e.End
		default:
			due = math.MaxInt64
			if e != nil {
				due = e.Start
			}
			if p.held.Len() > 0 {
				due = min(due, p.held.top().End)
			}
		}
		d := p.pace.WallAt(due).Sub(t)
		if p.look != nil && p.look.stale(pos) {
			p.publish(t)
		}
		// At least minSleep: what falls due meanwhile goes out together when it ends.
		wake, stop := p.clk.Timer(min(max(d, minSleep), sleepSlice))
		select {
		case <-ctx.Done():
			stop()
			return -1, ctx.Err()
		case t := <-p.o.seek:
			stop()
			return t, nil
		case <-p.o.paced:
			stop()
		case <-wake:
		}
		woke = true
	}
}

// pendingHeap holds the ops read and under way, earliest end first (then the recording's order).
type pendingHeap struct {
	h       []heldOp
	popped  timeline.Event
	scratch []timeline.Event
}

type heldOp struct {
	ev  timeline.Event
	seq uint64
}

func (h *pendingHeap) Len() int             { return len(h.h) }
func (h *pendingHeap) top() *timeline.Event { return &h.h[0].ev }

func (h *pendingHeap) less(i, j int) bool {
	a, b := &h.h[i], &h.h[j]
	return a.ev.End < b.ev.End || (a.ev.End == b.ev.End && a.seq < b.seq)
}

func (h *pendingHeap) push(e *timeline.Event, seq uint64) {
	h.h = append(h.h, heldOp{ev: *e, seq: seq})
	for i := len(h.h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			break
		}
		h.h[i], h.h[parent] = h.h[parent], h.h[i]
		i = parent
	}
}

// pop removes the earliest and returns it; valid until the next push.
func (h *pendingHeap) pop() *timeline.Event {
	n := len(h.h) - 1
	h.h[0], h.h[n] = h.h[n], h.h[0]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && h.less(l, m) {
			m = l
		}
		if l+1 < n && h.less(l+1, m) {
			m = l + 1
		}
		if m == i {
			break
		}
		h.h[i], h.h[m] = h.h[m], h.h[i]
		i = m
	}
	e := h.h[n].ev
	h.h = h.h[:n]
	h.popped = e
	return &h.popped
}

// evs returns the ops held, in a slice reused by the next call.
func (h *pendingHeap) evs() []timeline.Event {
	h.scratch = h.scratch[:0]
	for i := range h.h {
		h.scratch = append(h.scratch, h.h[i].ev)
	}
	return h.scratch
}
