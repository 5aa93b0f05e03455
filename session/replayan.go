package session

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// replayGen is one generation of a replay (from its start or a seek to the next seek): the window
// the console draws from and the analysis of every event emitted into it. The analysis is fed on
// the replay's goroutine as each event is emitted, not by the console from its window: a console
// that falls behind finds events trimmed from its window, and an analysis folded from the window
// skipped them (totals, steps and findings then disagreed with the report and from run to run).
// Only the drawing may lag; the numbers never do.
type replayGen struct {
	win *timeline.Window
	mu  sync.Mutex // the window's contents and the analysis, together
	an  *analysis.Analyzer
}

func newReplayGen(win *timeline.Window, m timeline.Meta, from int64) *replayGen {
	g := &replayGen{win: win, an: analysis.New(m)}
	g.an.StartAt(from) // a replay sought to a time emits what ends from then on
	return g
}

// NameHost gives the analysis a host's name the recording holds after its Meta chunk
// (timeline.HostNamer): the console names the host as the live session did.
func (g *replayGen) NameHost(h int32, name string) {
	g.mu.Lock()
	g.an.NameHost(h, name)
	g.mu.Unlock()
}

// emit puts e in the window and the analysis at once, so that a snapshot and a result taken
// together hold the same events.
func (g *replayGen) emit(e *timeline.Event) {
	g.mu.Lock()
	g.win.Emit(e)
	g.an.Emit(e)
	g.mu.Unlock()
}

// analysed returns a snapshot of the window and the analysis of every event emitted so far (all
// of those in the snapshot, and those trimmed from it before), after telling the diagnosis what is
// in flight at now.
func (g *replayGen) analysed(now int64, running []timeline.Event) (timeline.Snapshot, *analysis.Result) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(running) > 0 {
		g.an.Pending(now, running)
	}
	snap := g.win.Snapshot()
	return snap, g.an.Result(&snap)
}

// pending gives the analysis what the recorded run had in flight when it stopped early.
func (g *replayGen) pending(f *recordings.InFlight) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.an.Pending(f.Now, f.Events)
}

// Analysed returns a snapshot of the replay's window and the analysis of every event the replay
// has emitted since it started or last sought, however many the window has trimmed since: the
// numbers a console shows equal the headless report's however far behind its drawing falls.
// running are the ops in flight (InFlight), the latest of whose ends is now. Safe for concurrent
// use while the replay goes on.
func (rs *ReplaySource) Analysed(running []timeline.Event) (timeline.Snapshot, *analysis.Result) {
	now := int64(0)
	for i := range running {
		now = max(now, running[i].End)
	}
	return rs.cur.Load().analysed(now, running)
}

// diagnoseBefore reads the recording again from its start and gives the diagnosis of an every event
// that ends before from (Analyzer.Diagnose), so that after a seek, or in a replay from a time
// (replay --from), a finding is first seen where the recording first shows it, not where the
// replay began. r is a reader of its own. Only chunks that start before from are decoded when the
// recording has an index. It runs before any event is emitted to an.
func diagnoseBefore(ctx context.Context, an *analysis.Analyzer, r *recordings.Reader, from int64, salvage bool, prog *SeekProgress) error {
	if from <= 0 {
		return nil
	}
	if r.Indexed() {
		var chunks []recordings.IndexEntry
		for _, c := range r.Index() {
			if c.MinStart < from && (c.Type == recordings.ChunkEvents || c.Type == recordings.ChunkEventsZstd) {
				chunks = append(chunks, c) // the others hold nothing that ends before from
			}
		}
		prog.start("chunks", int64(len(chunks)))
		var evs []timeline.Event
		for _, c := range chunks {
			if err := ctx.Err(); err != nil {
				return err
			}
			var err error
			evs, err = r.EventsAt(c, evs[:0])
			prog.add(1)
			if err != nil {
				if salvage {
					continue // a damaged chunk: the salvaged replay skips it too
				}
				return fmt.Errorf("reading the recording before %d ns again for the diagnosis: %w", from, err)
			}
			for i := range evs {
				an.Diagnose(&evs[i])
			}
		}
		return nil
	}
	// Without an index, how far the reading has got is the time of the events read, of from.
	prog.start("ns", from)
	for r.Next() { // a reader of its own: this moves it
		if err := ctx.Err(); err != nil {
			return err
		}
		evs := r.At()
		for i := range evs {
			an.Diagnose(&evs[i])
		}
		if n := len(evs); n > 0 {
			prog.reach(min(evs[n-1].Start, from))
		}
	}
	if err := r.Err(); err != nil && !salvage {
		return fmt.Errorf("reading the recording before %d ns again for the diagnosis: %w", from, err)
	}
	return nil
}

// diagnoseBefore opens the recording again and reads it up to from for gen's diagnosis
// (diagnoseBefore). It runs before gen is published: no lock.
func (rs *ReplaySource) diagnoseBefore(ctx context.Context, gen *replayGen, from int64) error {
	r, err := rs.open(ctx)
	if r == nil {
		return err
	}
	defer r.Close()
	return diagnoseBefore(ctx, gen.an, r, from, rs.salvage, &rs.seeking)
}

// SeekProgress is how far a seek (or a replay from a time) has got with the one slow part before the
// replay shows events at its new position: reading the recording before it again for the
// diagnosis (every chunk before the position, over a large recording many seconds). The console
// shows it as the replay's own progress is shown. Safe for concurrent use.
type SeekProgress struct {
	to          atomic.Int64 // the position sought, + 1 (0: no seek under way)
	done, total atomic.Int64
	unit        atomic.Pointer[string]
}

// SeekState is a SeekProgress read at one time.
type SeekState struct {
	To          int64  // ns: the position sought
	Done, Total int64  // of Unit; Total 0 until the reading has begun
	Unit        string // "chunks" (a recording with an index), "ns" (without: the time read up to)
}

// begin says a seek to t is under way.
func (p *SeekProgress) begin(t int64) {
	p.done.Store(0)
	p.total.Store(0)
	p.to.Store(t + 1)
}

// start says the reading has begun, of total units.
func (p *SeekProgress) start(unit string, total int64) {
	if p == nil {
		return
	}
	p.unit.Store(&unit)
	p.done.Store(0)
	p.total.Store(total)
}

func (p *SeekProgress) add(n int64) {
	if p != nil {
		p.done.Add(n)
	}
}

func (p *SeekProgress) reach(n int64) {
	if p != nil && n > p.done.Load() {
		p.done.Store(n)
	}
}

// end says the replay shows events at its new position.
func (p *SeekProgress) end() { p.to.Store(0) }

// State returns the seek under way; false when none is.
func (p *SeekProgress) State() (SeekState, bool) {
	to := p.to.Load()
	if to == 0 {
		return SeekState{}, false
	}
	st := SeekState{To: to - 1, Done: p.done.Load(), Total: p.total.Load()}
	if u := p.unit.Load(); u != nil {
		st.Unit = *u
	}
	return st, true
}
