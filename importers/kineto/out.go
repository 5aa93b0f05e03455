package kineto

import (
	"fmt"
	"time"

	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// The output stage takes the items in start order from the sorter and puts each through what needs
// them in that order, then hands the events on in batches. Correlations are resolved in a window:
// a runtime call (or, for --like-hta, a CPU op) is noted as it enters, its GPU ops are looked up as
// they leave, lookWindow items later, so that a launch timestamped a little after its kernel (the
// CPU and GPU clocks of a trace are aligned only so well) is still found.

// lookWindow is how many items pass between an item's entry and its exit.
const lookWindow = 1 << 12

// batchEvents is how many events are handed on at a time: as many as a recording is read in.
const batchEvents = recordings.DefaultBatch

// output is the last stage of an import.
type output struct {
	m        *importer
	window   []item // a ring of lookWindow items
	head, n  int
	corr     corrTable
	median   int64
	outliers bool // events further than maxSpan from median are left out
	rebase   bool // put times on the import's axis (not for xfertop's own exports)
	begun    bool
	base     int64
	batch    []timeline.Event
	devices  map[int32]bool
	lastDev  int32 // the device last put in devices (-1: none)
	begin    func(*Imported) error
	emit     func([]timeline.Event) error
}

func newOutput(m *importer, begin func(*Imported) error, emit func([]timeline.Event) error) *output {
	return &output{m: m, corr: newCorrTable(m.opts.corrKeep), devices: map[int32]bool{}, lastDev: -1, begin: begin, emit: emit}
}

// admit applies to an item what the survey learnt once every file was read, and reports whether
// it goes on: it is of the class its file turned out to be (a generic trace's slices get their
// names; a GPU op or runtime call of a rank, its device), and --like-hta's selection keeps it.
func (o *output) admit(it *item) bool {
	fi := o.m.files[it.org.file()]
	if int(it.flags&classMask>>classShift) != fi.class {
		return false
	}
	it.flags &^= classMask
	switch fi.class {
	case classGeneric:
		it.ev.Label = fi.genIDs[it.ev.Label]
	case classKineto:
		if it.ev.Device == devicePending {
			it.ev.Device = fi.rank
		}
	}
	switch {
	case !o.m.htaActive:
		it.flags &^= flagCPUOp | flagSelect
	case !fi.hta.hasCPU:
		it.flags &^= flagSelect
	case it.flags&flagSelect != 0: // a GPU op: selected by its correlation's CPU op as it goes out
	case it.ev.Start >= fi.cut():
		if it.flags&flagLaunch == 0 {
			return false
		}
		it.flags = flagLaunch | flagPhantom | it.flags&flagGraph // left out, but its GPU ops' launch time is its start
	}
	return it.flags&flagPhantom == 0 || it.flags&(flagLaunch|flagCPUOp) != 0
}

// in takes the next item in start order.
func (o *output) in(it *item) error {
	if o.window == nil { // made with the first item: an import that fails while reading needs none
		o.window, o.batch = make([]item, lookWindow), make([]timeline.Event, 0, batchEvents)
	}
	if it.flags&(flagLaunch|flagCPUOp) != 0 && !o.outlier(it.ev.Start) {
		o.corr.put(it.org.file(), it.ev.Op, it.ev.Start, it.seq, it.flags)
	}
	if o.n == len(o.window) {
		if err := o.exit(&o.window[o.head]); err != nil {
			return err
		}
		o.window[o.head] = *it
		o.head = (o.head + 1) % len(o.window)
		return nil
	}
	o.window[(o.head+o.n)%len(o.window)] = *it
	o.n++
	return nil
}

func (o *output) outlier(t int64) bool {
	d := t - o.median
	return o.outliers && (d < -maxSpan || d > maxSpan)
}

// exit puts an item through the selection, the outlier check, its launch time and time 0, and
// hands its event on.
func (o *output) exit(it *item) error {
	if it.flags&flagPhantom != 0 {
		return nil
	}
	ev := it.ev
	file := it.org.file()
	if it.flags&flagSelect != 0 {
		t, ok := o.corr.cpu(file, ev.Op)
		if !ok || t >= o.m.files[file].cut() {
			return nil
		}
	}
	if o.outlier(ev.Start) {
		o.m.warn("%s: traceEvents[%d] %s: ts lies %s from the trace's other events (more than 24 h): event left out",
			o.m.names[file], it.org.index(), shortName([]byte(o.m.im.Strings.Lookup(ev.Label))), span(ev.Start-o.median))
		return nil
	}
	if it.flags&flagPending != 0 {
		ev.Queued = queuedUnknown
		if q, graph, ok := o.corr.launch(file, ev.Op); ok {
			ev.Queued = q
			if graph && ev.Kind.IsBusy() {
				ev.Aux |= timeline.AuxCaptured // replayed by a graph: the same mark the engine gives
			}
		}
	}
	if !o.begun {
		o.begun, o.base = true, ev.Start
		if err := o.begin(o.m.description(o.base)); err != nil {
			return err
		}
	}
	if o.rebase {
		if ev.Queued == queuedUnknown || ev.Queued < o.base {
			ev.Queued = -1
		} else {
			ev.Queued -= o.base
		}
		ev.Start -= o.base
		ev.End -= o.base
	}
	if ev.Device >= 0 && ev.Device != o.lastDev && ev.Kind != timeline.KindRuntime && ev.Kind != timeline.KindGraphLaunch && ev.Kind != timeline.KindStep && len(o.devices) < maxTracks {
		o.devices[ev.Device], o.lastDev = true, ev.Device
	}
	o.batch = append(o.batch, ev)
	if len(o.batch) == cap(o.batch) {
		return o.flush()
	}
	return nil
}

func (o *output) flush() error {
	if len(o.batch) == 0 {
		return nil
	}
	err := o.emit(o.batch)
	o.batch = o.batch[:0]
	return err
}

// finish lets the window's items out and hands on the last batch.
func (o *output) finish() error {
	for ; o.n > 0; o.n-- {
		if err := o.exit(&o.window[o.head]); err != nil {
			return err
		}
		o.head = (o.head + 1) % len(o.window)
	}
	if !o.begun {
		o.begun = true
		if err := o.begin(o.m.description(0)); err != nil {
			return err
		}
	}
	return o.flush()
}

// span writes a time difference for a person: days or years when it is that long.
func span(d int64) string {
	if d < 0 {
		d = -d
	}
	const day = int64(24 * time.Hour)
	if d >= 365*day {
		return fmt.Sprintf("%.1f years", float64(d)/float64(365.25*float64(day)))
	}
	return fmt.Sprintf("%.1f days", float64(d)/float64(day))
}

// QueuedUnknown marks, while importing, an event whose launch time is not known yet.
const QueuedUnknown = queuedUnknown

// MaxSpan is how far apart in time the events of one import may lie: a trace spans seconds to
// hours, so an event further than this from the others has a damaged timestamp.
const MaxSpan = maxSpan
