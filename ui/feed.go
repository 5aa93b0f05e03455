package ui

import (
	"slices"
	"sync"
	"sync/atomic"

	tea "charm.land/bubbletea/v2"

	"github.com/xfertop/xfertop/analysis"
	xtimeline "github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/agg"
	"github.com/xfertop/xfertop/ui/widget"
)

// feed is what stands between a source and the console's drawing: it owns the display state and
// the analysis, folds a snapshot's new events into them and publishes a frame that nothing writes
// again. Folding (thousands of events a tick and a Result over every device) runs in a command on
// Bubble Tea's goroutines, not in Update, so that the console's own goroutine only draws; Update
// installs the frame the command returns.
//
// Folds run one at a time (mu); a frame's seq orders them, so a fold that finishes after a newer
// one (a tick's fold overtaken by a seek's) is dropped.
type feed struct {
	src Source

	mu      sync.Mutex
	seq     uint64
	gen     uint64
	info    SourceInfo
	state   *agg.State
	an      *analysis.Analyzer
	running []xtimeline.Event     // scratch for the source's running ops
	last    atomic.Pointer[shown] // the frame of the last fold: read without the lock by a resume
	// next is the global index of the next event the analysis folds: ahead of the display
	// state's while the view is paused.
	next int64
	// paused is whether the view is paused: the analysis folds on, the display state waits. Its
	// tracks are what the paused view draws; kept up, they would be a second copy of the ops
	// once the window moved past the pause (two windows of memory), and the view shows none of it.
	paused atomic.Bool
}

// shown is what one frame draws from: a snapshot, the display state and the analysis of the same
// events, and the source's status read after the snapshot. Read-only.
type shown struct {
	seq     uint64
	snap    xtimeline.Snapshot
	state   *agg.State
	res     *analysis.Result
	info    SourceInfo // the description the analysis was made with
	status  Status
	running []xtimeline.Event // the ops running when the snapshot was taken, sorted (widget.Frame.Running)
}

// foldedMsg carries a frame folded off the console's goroutine.
type foldedMsg struct{ fr *shown }

func newFeed(src Source, info SourceInfo) *feed {
	return &feed{src: src, info: info, state: agg.New(), an: analysis.New(info.Meta)}
}

// fold reads a new snapshot and folds its new events into the display state and the analysis. A
// new generation (a replay that sought) starts both afresh, so nothing is counted twice. Safe for
// concurrent use.
func (f *feed) fold() *shown {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.unchanged() {
		// A finished source whose events and status are those of the last frame: folding again
		// would recompute the same figures every tick (7% of a core on an ended 1,024-GPU replay).
		return f.last.Load()
	}
	if a, ok := f.src.(Analyser); ok {
		return f.foldAnalysed(a)
	}
	f.readRunning() // before the snapshot: an op that ends in between is in it, and ended after it was seen running
	f.readHostNames()
	snap := f.src.Snapshot()
	newGen := snap.Generation != f.gen
	if newGen {
		f.newGeneration(&snap)
		f.an = analysis.New(f.info.Meta)
		f.an.StartAt(snap.From) // a replay sought to a time emits what ends from then on
		f.readHostNames()
		// The ops running were read before the snapshot, maybe of the generation before (a replay
		// that sought in between, at another position): read again, after it.
		f.readRunning()
	}
	f.foldNew(&snap, newGen || !f.paused.Load()) // paused, a seek's new start is shown all the same
	if len(f.running) > 0 {
		// What is in flight now names a hang while it lasts: the ops' End is the time they were
		// last seen running.
		now := int64(0)
		for i := range f.running {
			now = max(now, f.running[i].End)
		}
		f.an.Pending(now, f.running)
	}
	return f.publish(&snap, f.an.Result(&snap), f.src.Status())
}

// foldNew hands the analysis the events of snap it has not folded and, with display, brings the
// display state up to snap (the events the analysis folded while the view was paused are not
// folded again). Without, an event trimmed before the analysis read it is lost as it would be
// with: the analysis reads every tick.
func (f *feed) foldNew(snap *xtimeline.Snapshot, display bool) {
	if !display {
		for i := max(f.next, snap.Base); i < snap.Total; i++ {
			f.an.Emit(snap.At(i))
		}
		f.next = max(f.next, snap.Total)
		return
	}
	skip := f.next - max(f.state.Next, snap.Base) // read by the analysis during a pause
	f.state.Update(snap, func(e *xtimeline.Event) {
		if skip > 0 {
			skip--
			return
		}
		f.an.Emit(e)
	})
	f.next = snap.Total
}

// foldAnalysed folds a new snapshot of a source that analyses its events itself into the display
// state only; the analysis is the source's, of every event (the display may skip those trimmed
// before it looked). The status is read first: a source done then has produced every event, so a
// frame that says done shows the analysis of the end.
func (f *feed) foldAnalysed(a Analyser) *shown {
	status := f.src.Status()
	f.readRunning()
	snap, res := a.Analysed(f.running)
	newGen := snap.Generation != f.gen
	if newGen {
		f.newGeneration(&snap)
		// The ops running were read before the snapshot, maybe of the position before a seek:
		// read again, after it.
		f.readRunning()
	}
	if newGen || !f.paused.Load() { // paused, the display state waits (feed.paused)
		f.state.Update(&snap, nil)
	}
	return f.publish(&snap, res, status)
}

// newGeneration starts the display state over for a new generation (a replay that sought).
func (f *feed) newGeneration(snap *xtimeline.Snapshot) {
	f.gen = snap.Generation
	f.state, f.next = agg.New(), 0
	// A new generation may come with a new description (xfertop listen learns it from the first
	// sender): the analysis starts over with it.
	f.info = f.src.Info()
}

// unchanged reports whether the last frame already shows everything: its source said it was done,
// says so still with the same status, and its snapshot has no event the frame's lacks. The status
// is read before the snapshot: a source done then has produced every event it will.
func (f *feed) unchanged() bool {
	last := f.last.Load()
	if last == nil || !last.status.Done {
		return false
	}
	status := f.src.Status()
	if !sameStatus(&status, &last.status) {
		return false
	}
	snap := f.src.Snapshot()
	was := &last.snap
	return snap.Generation == was.Generation && snap.Total == was.Total && snap.Trimmed == was.Trimmed && snap.Now == was.Now
}

// sameStatus reports whether two statuses draw the same.
func sameStatus(a, b *Status) bool {
	sameExport := (a.Export == nil) == (b.Export == nil) && (a.Export == nil || *a.Export == *b.Export)
	sameImport := (a.Import == nil) == (b.Import == nil) && (a.Import == nil || *a.Import == *b.Import)
	sameSeek := (a.Seek == nil) == (b.Seek == nil) && (a.Seek == nil || *a.Seek == *b.Seek)
	return a.Speed == b.Speed && a.Done == b.Done && a.Err == b.Err && a.Dropped == b.Dropped && a.Note == b.Note && sameExport && sameImport && sameSeek
}

// publish makes the frame of a fold.
func (f *feed) publish(snap *xtimeline.Snapshot, res *analysis.Result, status Status) *shown {
	f.seq++
	info := f.info
	if status.Import != nil {
		info.Duration = status.Import.Length // the replay's length grows with the import
	}
	fr := &shown{seq: f.seq, snap: *snap, state: f.state.Publish(), res: res, info: info, status: status,
		running: slices.Clone(f.running)} // a copy: the frame is read on the console's goroutine while the next fold reads again
	f.last.Store(fr)
	return fr
}

// readHostNames gives the analysis the names of the hosts a live source has learned (HostNamer),
// before the snapshot whose events carry them.
func (f *feed) readHostNames() {
	if hn, ok := f.src.(HostNamer); ok {
		for h, name := range hn.HostNames() {
			f.an.NameHost(int32(h), name)
		}
	}
}

// readRunning asks the source for the ops it has running, into the buffer of the last fold.
func (f *feed) readRunning() {
	f.running = f.running[:0]
	if r, ok := f.src.(InFlighter); ok {
		f.running = r.InFlight(f.running)
		widget.SortRunning(f.running)
	}
}

// backlog is how many events the display state has yet to read; false while a fold holds the
// state (the caller must not wait for it: it is the console's goroutine).
func (f *feed) backlog() (int64, bool) {
	if !f.mu.TryLock() {
		return 0, false
	}
	defer f.mu.Unlock()
	snap := f.src.Snapshot()
	if snap.Generation != f.gen {
		return snap.Total - snap.Base, true
	}
	return snap.Total - max(f.state.Next, snap.Base), true
}

// foldCmd folds on the command's goroutine.
func (f *feed) foldCmd() tea.Cmd {
	return func() tea.Msg { return foldedMsg{fr: f.fold()} }
}
