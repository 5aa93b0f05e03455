package session

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/otel"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// Live is a run going on in the background, its events flowing into a bounded window that a
// console reads. The run never waits for its readers.
type Live struct {
	p      *Prepared
	cancel context.CancelCauseFunc
	done   chan struct{}
	mu     sync.Mutex
	out    Outcome
	err    error
	ended  atomic.Bool
}

// StartLive prepares cfg with a window (sized to the job, AutoWindow, unless cfg.Window is set)
// and starts it.
func StartLive(ctx context.Context, cfg Config) (*Live, error) {
	if cfg.Window <= 0 {
		cfg.Window = AutoWindow
	}
	p, err := Prepare(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	l := &Live{p: p, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		out, err := p.Run(ctx)
		l.mu.Lock()
		l.out, l.err = out, err
		l.mu.Unlock()
		l.ended.Store(true)
	}()
	return l, nil
}

// Snapshot returns the run's recent events.
func (l *Live) Snapshot() timeline.Snapshot { return l.p.Snapshot() }

// InFlight appends the run's ops still running to dst and returns it (see sim.Sim.InFlight); a
// backend that cannot tell appends nothing. Safe to call while the run goes on.
func (l *Live) InFlight(dst []timeline.Event) []timeline.Event { return l.p.InFlight(dst) }

// inFlighter is a backend that knows the ops it has running: the sim and cuda backends.
type inFlighter interface {
	InFlight(dst []timeline.Event) []timeline.Event
}

// InFlight appends the ops the backend has running to dst and returns it; see Live.InFlight.
func (p *Prepared) InFlight(dst []timeline.Event) []timeline.Event {
	if f, ok := p.backend.(inFlighter); ok {
		return f.InFlight(dst)
	}
	return dst
}

// Meta describes the run.
func (l *Live) Meta() timeline.Meta { return l.p.Meta() }

// Speed is the run's pace (0: unpaced).
func (l *Live) Speed() float64 { return l.p.Speed() }

// Dropped returns the events the recorder dropped.
func (l *Live) Dropped() int64 { return l.p.Dropped() }

// ExportStats returns the export's counters (nil when not exporting).
func (l *Live) ExportStats() *otel.Stats { return l.p.ExportStats() }

// Stop cancels the run and waits for it (and its recording) to finish.
func (l *Live) Stop() (Outcome, error) {
	l.cancel(ErrStopped)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.out, l.err
}

// Done reports whether the run has ended.
func (l *Live) Done() bool { return l.ended.Load() }

// Err returns what stopped the run early (an alert, a deadlock, a failure), once it has ended.
// Cancellation by Stop is not an error.
func (l *Live) Err() error {
	if !l.ended.Load() {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	if l.out.Ended != nil && !errors.Is(l.out.Ended, engine.ErrCanceled) {
		return l.out.Ended
	}
	return nil
}

// SimPeaks returns the simulator's per-device link peaks on topo in bytes/s: PCIe, NVLink (0
// without NVLink), NIC (each GPU's share of its host's NICs), HBM.
func SimPeaks(topo engine.Topology) [timeline.NumPeaks]float64 {
	m := sim.ModelOf(topo)
	var p [timeline.NumPeaks]float64
	p[timeline.PeakPCIe], p[timeline.PeakNVLink], p[timeline.PeakNIC], p[timeline.PeakHBM] = m.PCIeBps, m.NVLinkBps, m.NICBps, m.HBMBps
	return p
}

// ReplaySource replays a recording into a bounded window in the background, paced at a speed that
// can change while it runs, and can seek. A recording still being written (ReplayConfig.Growth) is
// played as it grows: Meta and Duration are then zero, and Description tells them as they become known.
type ReplaySource struct {
	Path     string
	Meta     timeline.Meta
	Duration int64 // the recording's length (0 when it has no index)
	known    bool  // Duration is known: the recording has an index
	growth   *recordings.Growth
	meta     atomic.Pointer[timeline.Meta] // a growing recording's, once its first chunk is read
	cur      atomic.Pointer[replayGen]     // the window and analysis of the current generation
	gen      atomic.Uint64
	limit    int
	salvage  bool
	speed    atomic.Uint64 // float64 bits
	seek     chan int64
	done     atomic.Bool
	err      atomic.Pointer[error]
	dropped  atomic.Int64
	stop     context.CancelFunc
	finished chan struct{}
	running  runningSet    // the ops under way at the position
	paced    chan struct{} // a new speed: the replay wakes to keep its position where it is
	seeking  SeekProgress  // a seek under way, until the replay shows events at its new position
}

// StartReplay opens a recording and starts replaying it at speed (0: as fast as possible) from from.
// A growing recording (cfg.Growth) is opened once its first chunk is published.
func StartReplay(ctx context.Context, cfg ReplayConfig, window int) (*ReplaySource, error) {
	rs := &ReplaySource{Path: cfg.Path, growth: cfg.Growth, limit: window, salvage: cfg.Salvage,
		seek: make(chan int64, 1), finished: make(chan struct{}), paced: make(chan struct{}, 1)}
	rs.running.clock = cfg.Clock
	if rs.running.clock == nil {
		rs.running.clock = wallClock{}
	}
	if cfg.Growth == nil {
		r, err := recordings.Open(cfg.Path, recordings.Options{Salvage: cfg.Salvage})
		if err != nil {
			return nil, err
		}
		r.Close()
		rs.Meta = r.Meta()
		rs.known = r.Indexed()
		for _, e := range r.Index() {
			rs.Duration = max(rs.Duration, e.MaxEnd)
		}
	}
	if window <= 0 && cfg.Growth == nil {
		window = AutoWindowFor(rs.Meta.Devices) // a growing recording's size is known when it is opened (replay)
	}
	rs.limit = window
	rs.cur.Store(newReplayGen(timeline.NewWindow(window, nil), rs.Meta, 0))
	rs.speed.Store(mathFloat64bits(max(cfg.Speed, 0)))
	ctx, rs.stop = context.WithCancel(ctx)
	go rs.loop(ctx, cfg.From.Nanoseconds())
	return rs, nil
}

// SetSpeed changes the pace; 0 replays as fast as possible. The position stays where it is and
// moves on at the new pace from now.
func (rs *ReplaySource) SetSpeed(x float64) {
	rs.speed.Store(mathFloat64bits(max(x, 0)))
	select {
	case rs.paced <- struct{}{}:
	default: // the replay has yet to take the last change: it reads the speed then
	}
}

// Speed returns the pace.
func (rs *ReplaySource) Speed() float64 { return mathFloat64frombits(rs.speed.Load()) }

// Description returns the recording's description and length as known now: those of a recording
// still being written are unknown (zero) until its first chunk is read, and its length grows.
func (rs *ReplaySource) Description() (timeline.Meta, int64) {
	if rs.growth == nil {
		return rs.Meta, rs.Duration
	}
	var m timeline.Meta
	if p := rs.meta.Load(); p != nil {
		m = *p
	}
	return m, rs.growth.State().MaxEnd
}

// SeekTo asks the replay to jump to t (ns), no further than the recording's end. In a recording
// still being written it goes no further than what is written, so that a seek shows events at
// once rather than waiting for them.
func (rs *ReplaySource) SeekTo(t int64) {
	// No further than the end (of what is written, while it is being written): a seek past it
	// would replay nothing, and the console would stand at time 0 with nothing to show.
	// A recording whose events all lie before time 0 has a length of 0, and a seek there replays
	// it whole.
	if _, length := rs.Description(); length > 0 || rs.known {
		t = min(t, length)
	}
	select {
	case <-rs.seek:
	default:
	}
	// Not done from now on, before the loop can take the seek: stored after, it could land once
	// the loop had played a short rest to its end, and the replay would never be done again.
	rs.done.Store(false)
	rs.seeking.begin(t)
	rs.seek <- t
}

// Seeking returns how far a seek (or a replay from a time) has got before the replay shows
// events at its new position; false when none is under way.
func (rs *ReplaySource) Seeking() (SeekState, bool) { return rs.seeking.State() }

// Snapshot returns the replayed events held now.
func (rs *ReplaySource) Snapshot() timeline.Snapshot { return rs.cur.Load().win.Snapshot() }

// InFlight appends to dst the ops under way at the replay's position now (start ≤ position < end),
// each with End set to the position, and returns it: what a live backend reports as running. They
// are emitted, ended, when the position reaches their end. Safe to call while the replay goes on;
// after a seek it reports nothing until the replay, at the new position, has looked.
func (rs *ReplaySource) InFlight(dst []timeline.Event) []timeline.Event {
	return rs.running.inFlight(dst)
}

// Done reports whether the whole recording has been replayed.
func (rs *ReplaySource) Done() bool { return rs.done.Load() }

// Err returns what stopped the replay, if anything.
func (rs *ReplaySource) Err() error {
	if p := rs.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Dropped returns the events the recording says were dropped while it was made.
func (rs *ReplaySource) Dropped() int64 { return rs.dropped.Load() }

// Stop ends the replay.
func (rs *ReplaySource) Stop() {
	rs.stop()
	<-rs.finished
}

func (rs *ReplaySource) loop(ctx context.Context, from int64) {
	defer close(rs.finished)
	for {
		next, err := rs.replay(ctx, from)
		if next < 0 {
			rs.seeking.end() // a replay that could not open the recording never got to its position
		}
		if err != nil {
			rs.err.Store(&err)
		}
		if next < 0 {
			// Played to the end (or failed): wait for a seek or the end of the session.
			rs.done.Store(true)
			select {
			case <-ctx.Done():
				return
			case next = <-rs.seek:
			}
			rs.done.Store(false) // a seek that came as this replay ended found it not yet done
		}
		if ctx.Err() != nil {
			return
		}
		from = next
		rs.err.Store(nil)
	}
}

// replay replays from time from into a fresh window; it returns the time to seek to when asked
// to, or -1 at the end.
func (rs *ReplaySource) replay(ctx context.Context, from int64) (int64, error) {
	r, err := rs.open(ctx)
	if r == nil {
		return -1, err
	}
	defer r.Close()
	// A fresh window over this reader's string table, of a new generation: the console starts
	// afresh after a seek.
	limit := rs.limit
	if limit <= 0 {
		limit = AutoWindowFor(r.Meta().Devices)
	}
	win := timeline.NewWindow(limit, r.Strings())
	win.SetGeneration(rs.gen.Add(1))
	win.SetFrom(from)
	// Nothing of the last position runs at the new one: cleared before the new window is seen, so
	// a console that reads this window reads no running op from before the seek.
	rs.running.clear()
	gen := newReplayGen(win, r.Meta(), from)
	r.NameHostsTo(gen) // names the recording learned after its Meta chunk, before their events
	if from > 0 {
		rs.seeking.begin(from)
		err := rs.diagnoseBefore(ctx, gen, from)
		if err != nil {
			rs.seeking.end()
			if ctx.Err() != nil {
				return -1, nil
			}
			return -1, err
		}
	}
	rs.cur.Store(gen)
	rs.seeking.end() // the new window is the console's: what it shows is at the new position
	emit := func(e *timeline.Event) {
		gen.emit(e)
		rs.dropped.Store(r.Dropped())
	}
	o := playOpts{seek: rs.seek, paced: rs.paced, running: &rs.running, clock: rs.running.clock}
	if rs.growth != nil {
		o.follow = rs.follow(r)
	}
	next, err := play(ctx, r, from, rs.Speed, emit, o)
	rs.dropped.Store(r.Dropped())
	if f := r.InFlight(); f != nil && err == nil && next < 0 {
		gen.pending(f) // at the end, as the run's own diagnosis looked when it stopped
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return -1, nil
	}
	if err != nil || next >= 0 {
		return next, err
	}
	if len(r.Warnings()) > 0 {
		return -1, errors.New(r.Warnings()[0])
	}
	return -1, nil
}

// open opens the recording; one still being written once its first chunk is published (nil
// without an error when it ends before, or ctx is done: the writer's error says why).
func (rs *ReplaySource) open(ctx context.Context) (*recordings.Reader, error) {
	opts := recordings.Options{Salvage: rs.salvage}
	if rs.growth == nil {
		return recordings.Open(rs.Path, opts)
	}
	for {
		st := rs.growth.State()
		if st.Size > 0 {
			r, err := recordings.OpenGrowing(rs.Path, rs.growth, opts)
			if err == nil {
				m := r.Meta()
				rs.meta.Store(&m)
			}
			return r, err
		}
		if st.Ended {
			return nil, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-st.Changed:
		}
	}
}

// follow waits at the end of what r holds of a recording still being written until more is
// published (true), the recording ends (-1), a seek comes (its time) or ctx is done (-1).
func (rs *ReplaySource) follow(r *recordings.Reader) func(context.Context, <-chan int64) (int64, bool) {
	return func(ctx context.Context, seek <-chan int64) (int64, bool) {
		for {
			st := rs.growth.State() // before Grow: a publish in between closes st.Changed
			if r.Grow() {
				return 0, true
			}
			if st.Ended {
				return -1, false
			}
			select {
			case <-ctx.Done():
				return -1, false
			case t := <-seek:
				return t, false
			case <-st.Changed:
			}
		}
	}
}

func mathFloat64bits(f float64) uint64     { return math.Float64bits(f) }
func mathFloat64frombits(b uint64) float64 { return math.Float64frombits(b) }
