package kineto

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/xfertop/xfertop/timeline"
)

// Bounds on the numbers a trace may carry. A field outside them is named in a warning and left out
// of every total (the event is dropped, or the field taken as unknown), so one bad event cannot
// corrupt a sum.
const (
	maxEventBytes = 1 << 40 // one copy or collective message: more than any device holds
	maxTotalBytes = 1 << 60 // all events together: sums stay in int64 even counted twice (sender and receiver)
	maxSpan       = int64(24 * time.Hour)
	maxTime       = 1 << 62 // |ts| in ns (146 years from the epoch): sums and differences stay in int64
	maxWarnings   = 20
)

// Bounds on what an import keeps per distinct name or track, so that a trace whose every event has
// a name or a thread of its own does not grow memory with its events: past them, a name is taken as
// unknown and a track shares the last one, and the import says so.
const (
	maxLabels = 1 << 18
	maxTracks = 1 << 16
)

// Sentinels used while a file is read, resolved as its events go out.
const (
	queuedUnknown = math.MinInt64
	queuedPending = math.MinInt64 + 1 // has a correlation: the launch is looked up as the events go out
	devicePending = math.MinInt32     // the file's rank, known after the survey
)

// origin says where an imported event came from: file and index in traceEvents. It travels with
// each event until the event goes out.
type origin uint64

const (
	indexBits   = 40
	originFiles = 1<<23 - 1
)

func makeOrigin(file int, index int64) origin {
	return origin(uint64(file)&originFiles)<<indexBits | origin(uint64(index)&(1<<indexBits-1))
}

func (o origin) file() int    { return int(o >> indexBits & originFiles) }
func (o origin) index() int64 { return int64(o & (1<<indexBits - 1)) }

// interner interns byte slices without allocating for strings it already holds, up to maxLabels.
type interner struct {
	ids  map[string]uint32
	strs *timeline.Strings
	lost int // names taken as unknown past maxLabels
	// recent holds names met before, by a hash of a few of their bytes: a trace repeats a few
	// names (its kernels, its runtime calls) in turn, and comparing one with the name in its
	// entry costs less than hashing the whole of it for the map.
	recent [recentNames]struct {
		s  string
		id uint32
	}
}

// recentNames is how many entries the interner's cache of names has (a power of two).
const recentNames = 256

// recentSlot is the cache entry of a name: a hash of its length and three of its bytes.
func recentSlot(b []byte) int {
	n := len(b)
	if n == 0 {
		return 0
	}
	h := uint(n)*0x9e37 ^ uint(b[0])*0x85eb ^ uint(b[n-1])*0xc2b2 ^ uint(b[n/2])*0x27d4
	return int(h>>4^h) & (recentNames - 1)
}

func newInterner(strs *timeline.Strings) *interner {
	return &interner{ids: map[string]uint32{"": 0}, strs: strs}
}

func (n *interner) id(b []byte) uint32 { return n.idUses(b, 1) }

// idUses interns a name that uses events carry: each is counted as left out when it is.
func (n *interner) idUses(b []byte, uses int) uint32 {
	r := &n.recent[recentSlot(b)]
	if r.s == string(b) {
		return r.id // an empty entry holds "", whose id is 0
	}
	if id, ok := n.ids[string(b)]; ok {
		r.s, r.id = n.strs.Lookup(id), id
		return id
	}
	if len(n.ids) >= maxLabels {
		n.lost += uses
		return 0
	}
	s := string(b)
	id := n.strs.ID(s)
	n.ids[s] = id
	r.s, r.id = s, id
	return id
}

// provisional interns the names of a file's slices as a generic Chrome trace would have them,
// apart from the import's names until the file turns out to be one, counting each name's uses.
type provisional struct {
	*interner
	uses []int // by id
}

func newProvisional() *provisional { return &provisional{interner: newInterner(timeline.NewStrings())} }

func (p *provisional) id(b []byte) uint32 {
	id := p.interner.id(b)
	if int(id) >= len(p.uses) {
		p.uses = append(p.uses, make([]int, int(id)+1-len(p.uses))...)
	}
	p.uses[id]++
	return id
}

// commit interns the names into n, in the order they came, and returns each one's id there.
func (p *provisional) commit(n *interner) []uint32 {
	ids := make([]uint32, p.strs.Len())
	for i := range ids {
		uses := 0
		if i < len(p.uses) {
			uses = p.uses[i]
		}
		ids[i] = n.idUses([]byte(p.strs.Lookup(uint32(i))), uses)
	}
	n.lost += p.lost
	return ids
}

// Flags of an item: what the output stage does with it besides handing it on. flagCPUOp and
// flagSelect are set as the file is read, when --like-hta might select (whether it does is known
// once every file is read), and cleared by admit when it does not.
const (
	flagLaunch  uint8 = 1 << iota // a runtime call with a correlation: its start is its GPU ops' launch time
	flagCPUOp                     // one of HTA's CPU ops with a correlation: it selects the GPU ops it launched
	flagPending                   // a GPU op whose launch time is looked up by correlation
	flagSelect                    // kept only when a CPU op of its correlation starts before the file's cut (--like-hta)
	flagPhantom                   // told to the lookups only, never handed on
	// flagGraph (above the class bits) marks a graph launch (cudaGraphLaunch): the GPU ops of its
	// correlation are a graph's replayed ops.
	flagGraph uint8 = 1 << 7

	classShift = 5 // the class the item was made as (classKineto, ...), in the two bits above the flags
	classMask  = 3 << classShift
)

// item is an event on its way out: its position among every file's events (ties in start keep
// it), its origin, and what the output stage resolves for it.
type item struct {
	ev    timeline.Event
	seq   int64
	org   origin
	flags uint8
}

// Classes of the items of a file, one of which it turns out to be once read to its end.
const (
	classKineto   = iota // a PyTorch profiler trace: GPU ops, runtime calls, steps
	classGeneric         // a Chrome trace of another tool: every slice a kernel on a track
	classExported        // xfertop's own export: events rebuilt from their args
	classes
	// classLeftOut is a file left out after an error (no item is made as it, so admit keeps none).
	classLeftOut = classes
)

// fileState is the state of the file being read.
type fileState struct {
	name  string
	index int
	info  *fileInfo // what the survey learns, complete at the file's end
	gpu   bool      // a GPU op was read: a Kineto trace, not a generic Chrome one
	// Until the first GPU op, the file may turn out to be a generic Chrome trace: its slices are
	// made as such too, their names interned apart (genLabels) and their tracks counted here, so
	// that only a generic file's reach the import's names and warnings.
	pids       map[string]int32
	tids       map[string]uint32
	genLabels  *provisional
	lostTracks int
	track      []byte // pid/tid of the slice being made
	held       held   // its slices, until the first GPU op
	// Events whose phase is not read, said in one warning at the file's end: duration events
	// (B and E: xfertop reads complete events, X), and phases the Trace Event Format does not name.
	beginEnd, unknownPh int64
	firstUnknown        byte // the first unknown phase (0: an event without one)
}

// knownPhases are the phases of the Trace Event Format that xfertop passes over on purpose
// (metadata, counters, flows, async, object and sample events, marks) or reads (X, i, b).
const knownPhases = "XiIMCstfbneNODPRcVv()"

// notePhase counts an event whose phase xfertop does not read, for the file's warning.
func (f *fileState) notePhase(ph byte) {
	switch {
	case ph == 'B' || ph == 'E':
		f.beginEnd++
	case ph == 0 || !strings.ContainsRune(knownPhases, rune(ph)):
		if f.unknownPh == 0 {
			f.firstUnknown = ph
		}
		f.unknownPh++
	}
}

// warnPhases warns of the file's events whose phase is not read.
func (m *importer) warnPhases() {
	f := &m.f
	if f.beginEnd > 0 {
		m.warn("%s: %s (ph B or E) not read: xfertop reads complete events (ph X); export the trace with complete events", f.name, events(f.beginEnd, "duration event"))
	}
	if f.unknownPh > 0 {
		first := "no ph"
		if f.firstUnknown != 0 {
			first = fmt.Sprintf("ph %q", string(f.firstUnknown))
		}
		m.warn("%s: %s of a phase the Trace Event Format does not name (the first: %s) left out", f.name, events(f.unknownPh, "event"), first)
	}
}

// events says a count of events: "1 event", "2 events".
func events(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// importer reads the events of one or more files, once, into items for the sorter: every item the
// file would make as each of the classes it may turn out to be (known at its end), with the
// file's rank and --like-hta's selection left to be applied as the items go out (admit).
type importer struct {
	opts       Options
	im         *Imported
	multi      bool
	labels     *interner
	names      []string // file names, by index
	warnings   []string
	moreWarn   int
	totalBytes int64
	lostTracks int
	seq        int64
	stepNames  map[string]bool // up to two distinct ProfilerStep#N names, as HTA counts them
	files      []*fileInfo
	htaActive  bool // --like-hta selects: the traces name two or more steps (known once every file is read)
	f          fileState
	put        func(it *item) error // the sorter
	scratch    item                 // the item being made
	done       int64                // bytes read, for progress
	total      int64
}

func newImporter(opts Options, multi bool) *importer {
	im := &Imported{Strings: timeline.NewStrings(), Format: "kineto"}
	return &importer{opts: opts.withDefaults(), im: im, multi: multi, labels: newInterner(im.Strings), stepNames: map[string]bool{}}
}

func (m *importer) warn(format string, args ...any) {
	if len(m.warnings) < maxWarnings {
		m.warnings = append(m.warnings, fmt.Sprintf(format, args...))
		return
	}
	m.moreWarn++
}

// shortName quotes a name for a message, cut so that a hostile one cannot flood the terminal.
func shortName(b []byte) string {
	const most = 80
	if len(b) > most {
		return strconv.Quote(string(b[:most])) + "…"
	}
	return strconv.Quote(string(b))
}

func (m *importer) warnEvent(e *rawEvent, format string, args ...any) {
	m.warn("%s: traceEvents[%d] %s: %s", m.f.name, e.Index, shortName(e.Name), fmt.Sprintf(format, args...))
}

// label interns a name.
func (m *importer) label(b []byte) uint32 { return m.labels.id(b) }

// startFile prepares to read a file.
func (m *importer) startFile(info *fileInfo) {
	m.f = fileState{name: info.name, index: info.index, info: info, pids: map[string]int32{}, tids: map[string]uint32{},
		genLabels: newProvisional()}
}

// add takes one event of the file being read. h is the header as read so far. It makes what the
// file would make as each of the classes it may turn out to be (admit keeps those of the class it
// is), and notes what the survey needs of them.
func (m *importer) add(e *rawEvent, h *header) error {
	f := &m.f
	if e.Ph != 'X' {
		f.notePhase(e.Ph)
	}
	kind, gpu := gpuCategory(e.Cat)
	if gpu && !f.gpu {
		f.gpu = true
		f.pids, f.tids, f.genLabels, f.lostTracks = nil, nil, nil, 0
		m.dropHeld()
	}
	if h.Metadata != nil || e.Args.Has&hasXfertop != 0 {
		if e.Ph == 'X' || e.Ph == 'i' || e.Ph == 'b' {
			if err := m.addExported(e); err != nil {
				return err
			}
		}
		if h.Metadata != nil {
			return nil // an xfertop export: its events are all in their args
		}
	}
	if e.Ph != 'X' {
		return nil
	}
	start, end, ok := m.checkedTimes(e)
	if !ok {
		return nil
	}
	htaGPU := isHTAGPU(e)
	if m.opts.LikeHTA {
		m.htaRow(e, start, htaGPU)
	}
	if !f.gpu {
		if err := m.addGeneric(e, start, end); err != nil {
			return err
		}
	}
	// Kineto also writes each ProfilerStep#N annotation onto the GPU's timeline
	// (gpu_user_annotation, the span of the GPU work it launched): the step is the CPU's one, and
	// the copy would count each step twice (real torch 2.11 traces have both).
	if bytes.HasPrefix(e.Name, []byte("ProfilerStep#")) && e.Cat != "gpu_user_annotation" {
		if err := m.addStep(e, start, end); err != nil {
			return err
		}
	}
	if gpu || isRuntime(e.Cat) {
		return m.addKineto(e, kind, gpu, start, end, htaGPU)
	}
	if m.opts.LikeHTA && !htaGPU && htaCPUOp(e) && e.Args.Has&hasCorrelation != 0 {
		return m.phantomCPUOp(e, start)
	}
	return nil
}

// phantomCPUOp passes on a CPU op xfertop does not keep, but which selects the GPU ops it launched
// under --like-hta (admit leaves it out when the selection does not apply, or the op starts after
// the file's cut).
func (m *importer) phantomCPUOp(e *rawEvent, start int64) error {
	m.seq++
	it := m.item(timeline.Event{Start: start, Op: uint64(e.Args.Correlation)}, e.Index)
	it.seq, it.flags = m.seq, flagCPUOp|flagPhantom|classKineto<<classShift
	return m.put(it)
}

// isHTAGPU tells whether Holistic Trace Analysis counts an event as a GPU op.
func isHTAGPU(e *rawEvent) bool {
	return e.Args.Has&hasStream != 0 && e.Args.Stream >= 0 && e.Args.Has&hasCorrelation != 0 && e.Args.Correlation >= 0 ||
		string(e.Name) == "Event Sync" || string(e.Name) == "Context Sync"
}

// htaCPUOp tells whether HTA keeps a row when it parses (every slice with a category and a
// duration); those that are not GPU ops are its CPU ops.
func htaCPUOp(e *rawEvent) bool {
	return e.Cat != "" && e.Cat != "Trace" && e.HasDur
}

// checkedTimes validates an event's ts and dur and returns its interval in ns.
func (m *importer) checkedTimes(e *rawEvent) (start, end int64, ok bool) {
	switch {
	case e.BadTs || (e.HasTs && (e.Ts >= maxTime || e.Ts <= -maxTime)):
		m.warnEvent(e, "ts is not a time within 146 years of the epoch: event left out")
		return 0, 0, false
	case !e.HasTs:
		return 0, 0, false
	case e.BadDur:
		m.warnEvent(e, "dur is not a number of microseconds: event left out")
		return 0, 0, false
	case e.Dur >= maxTime:
		m.warnEvent(e, "dur is out of range (146 years or more): event left out")
		return 0, 0, false
	case e.Dur > maxSpan:
		m.warnEvent(e, "dur %s is longer than 24 h: event left out", time.Duration(e.Dur))
		return 0, 0, false
	}
	dur := e.Dur
	if dur <= -maxTime {
		m.warnEvent(e, "negative dur, out of range (146 years or more): taken as 0")
		dur = 0
	} else if dur < 0 {
		m.warnEvent(e, "negative dur %s: taken as 0", time.Duration(dur))
		dur = 0
	}
	if !m.opts.LikeHTA {
		return e.Ts, e.Ts + dur, true
	}
	// Holistic Trace Analysis reads µs as float64 and rounds ns-precision timestamps to whole µs,
	// the start up and the end down (hta/common/trace_parser.py, round_down_time_stamps); a slice
	// shorter than a µs may end before it starts there, and is empty here.
	s, en := math.Ceil(e.TsF), math.Floor(e.TsF+max(e.DurF, 0))
	start = int64(s) * 1000
	return start, max(start, int64(en)*1000), true
}

// htaRow notes what --like-hta's selection needs: where HTA's CPU ops (every slice with a
// category and a duration that is not a GPU op) start, and the ProfilerStep#N annotations.
func (m *importer) htaRow(e *rawEvent, start int64, gpu bool) {
	if !htaCPUOp(e) {
		return // HTA drops these rows when it parses
	}
	step := bytes.HasPrefix(e.Name, []byte("ProfilerStep#")) && len(e.Name) > len("ProfilerStep#") &&
		e.Name[len("ProfilerStep#")] >= '0' && e.Name[len("ProfilerStep#")] <= '9'
	if step && len(m.stepNames) < 2 && !m.stepNames[string(e.Name)] {
		m.stepNames[string(e.Name)] = true // two are all the selection asks about
	}
	if gpu {
		return
	}
	h := &m.f.info.hta
	if !h.hasCPU || start < h.minCPU {
		h.hasCPU, h.minCPU = true, start
	}
	if step && (!h.hasStep || start > h.lastStep) {
		h.hasStep, h.lastStep = true, start
	}
}
