package kineto

// The importer as it was before imports streamed (it held every event of a file until its end, and
// every file's until the import's), kept for BenchmarkStreamVsWhole to compare with.

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xfertop/xfertop/timeline"
)

// legacyOrigin says where an imported event came from: file, index in traceEvents, and whether Holistic
// Trace Analysis counts it as a GPU op. It is kept beside each event until the import finishes.
type legacyOrigin uint64

const (
	legacyOriginGPU   legacyOrigin = 1 << 63
	legacyIndexBits                = 40
	legacyOriginFiles              = 1<<22 - 1
)

func legacyMakeOrigin(file int, index int64, gpu bool) legacyOrigin {
	o := legacyOrigin(uint64(file)&legacyOriginFiles)<<legacyIndexBits | legacyOrigin(uint64(index)&(1<<legacyIndexBits-1))
	if gpu {
		o |= legacyOriginGPU
	}
	return o
}

func (o legacyOrigin) file() int    { return int(o >> legacyIndexBits & legacyOriginFiles) }
func (o legacyOrigin) index() int64 { return int64(o & (1<<legacyIndexBits - 1)) }
func (o legacyOrigin) gpu() bool    { return o&legacyOriginGPU != 0 }

// legacyHTA is what --like-hta's selection needs of one file, gathered while it is read.
type legacyHTA struct {
	hasCPU, hasStep  bool
	minCPU, lastStep int64           // earliest CPU op; start of the last ProfilerStep (ns)
	corrCPU          map[int64]int64 // correlation → earliest CPU op carrying it
}

// legacyFile is the state of the file being read.
type legacyFile struct {
	name     string
	index    int
	lo       int  // its first event in im.Events
	gpu      bool // it has GPU ops: a Kineto trace, not a generic Chrome one
	launches map[int64]int64
	graphs   map[int64]bool // correlations whose (last) launch is a graph launch
	// Until the first GPU op, the file might be a generic Chrome trace: its slices are kept as such
	// too, with their own labels, and dropped at the first GPU op.
	generic    []timeline.Event
	genOrigins []legacyOrigin
	genLabels  *interner
	pids       map[string]int32
	tids       map[string]uint32
	exported   []timeline.Event
	expOrigins []legacyOrigin
}

// legacyImporter turns the events of one or more files into timeline events as they are read.
type legacyImporter struct {
	opts       Options
	im         *Imported
	multi      bool
	labels     *interner
	origins    []legacyOrigin // beside im.Events
	names      []string       // file names, by index
	warnings   []string
	moreWarn   int
	totalBytes int64
	stepNames  map[string]bool // distinct ProfilerStep#N names, as HTA counts them
	hta        []legacyHTA
	f          legacyFile
}

func newLegacyImporter(opts Options, multi bool) *legacyImporter {
	im := &Imported{Strings: timeline.NewStrings(), Format: "kineto"}
	return &legacyImporter{opts: opts.withDefaults(), im: im, multi: multi, labels: newInterner(im.Strings), stepNames: map[string]bool{}}
}

func (m *legacyImporter) warn(format string, args ...any) {
	if len(m.warnings) < maxWarnings {
		m.warnings = append(m.warnings, fmt.Sprintf(format, args...))
		return
	}
	m.moreWarn++
}

func (m *legacyImporter) warnEvent(e *rawEvent, format string, args ...any) {
	m.warn("%s: traceEvents[%d] %s: %s", m.f.name, e.Index, shortName(e.Name), fmt.Sprintf(format, args...))
}

// read imports one file.
func (m *legacyImporter) read(index int, name string, r io.Reader) error {
	m.f = legacyFile{name: name, index: index, lo: len(m.im.Events), launches: map[int64]int64{}, graphs: map[int64]bool{},
		genLabels: newInterner(timeline.NewStrings()), pids: map[string]int32{}, tids: map[string]uint32{}}
	m.names = append(m.names, name)
	m.hta = append(m.hta, legacyHTA{corrCPU: map[int64]int64{}})
	h, err := decode(name, r, m.opts, func(e *rawEvent, h *header) error { m.add(e, h); return nil })
	if err != nil {
		return err
	}
	m.endFile(h)
	return nil
}

// add takes one event of the file being read.
func (m *legacyImporter) add(e *rawEvent, h *header) {
	f := &m.f
	kind, gpu := gpuCategory(e.Cat)
	if gpu && !f.gpu {
		f.gpu = true
		f.generic, f.genOrigins, f.genLabels, f.pids, f.tids = nil, nil, nil, nil, nil
	}
	if h.Metadata != nil || e.Args.Has&hasXfertop != 0 {
		if e.Ph == 'X' || e.Ph == 'i' || e.Ph == 'b' {
			m.addExported(e)
		}
		if h.Metadata != nil {
			return // an xfertop export: its events are all in their args
		}
	}
	if e.Ph != 'X' {
		return
	}
	start, end, ok := m.times(e)
	if !ok {
		return
	}
	htaGPU := e.Args.Has&hasStream != 0 && e.Args.Stream >= 0 && e.Args.Has&hasCorrelation != 0 && e.Args.Correlation >= 0 ||
		string(e.Name) == "Event Sync" || string(e.Name) == "Context Sync"
	if m.opts.LikeHTA {
		m.htaRow(e, start, htaGPU)
	}
	if !f.gpu {
		m.addGeneric(e, start, end)
	}
	if bytes.HasPrefix(e.Name, []byte("ProfilerStep#")) {
		m.addStep(e, start, end)
	}
	if gpu || isRuntime(e.Cat) {
		m.addKineto(e, kind, gpu, start, end, htaGPU)
	}
}

// times validates an event's ts and dur and returns its interval in ns.
func (m *legacyImporter) times(e *rawEvent) (start, end int64, ok bool) {
	switch {
	case e.BadTs || (e.HasTs && (e.Ts >= maxTime || e.Ts <= -maxTime)):
		m.warnEvent(e, "ts is not a time within 146 years of the epoch: event left out")
		return 0, 0, false
	case !e.HasTs:
		return 0, 0, false
	case e.BadDur:
		m.warnEvent(e, "dur is not a number of microseconds: event left out")
		return 0, 0, false
	case e.Dur > maxSpan:
		m.warnEvent(e, "dur %s is longer than 24 h: event left out", time.Duration(e.Dur))
		return 0, 0, false
	}
	dur := e.Dur
	if dur < 0 {
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

// htaRow notes what --like-hta's selection needs: HTA's CPU ops (every slice with a category and a
// duration that is not a GPU op), their correlations, and the ProfilerStep#N annotations.
func (m *legacyImporter) htaRow(e *rawEvent, start int64, gpu bool) {
	if e.Cat == "" || e.Cat == "Trace" || !e.HasDur {
		return // HTA drops these rows when it parses
	}
	step := bytes.HasPrefix(e.Name, []byte("ProfilerStep#")) && len(e.Name) > len("ProfilerStep#") &&
		e.Name[len("ProfilerStep#")] >= '0' && e.Name[len("ProfilerStep#")] <= '9'
	if step && !m.stepNames[string(e.Name)] {
		m.stepNames[string(e.Name)] = true
	}
	if gpu {
		return
	}
	h := &m.hta[m.f.index]
	if !h.hasCPU || start < h.minCPU {
		h.hasCPU, h.minCPU = true, start
	}
	if step && (!h.hasStep || start > h.lastStep) {
		h.hasStep, h.lastStep = true, start
	}
	if e.Args.Has&hasCorrelation != 0 {
		if t, ok := h.corrCPU[e.Args.Correlation]; !ok || start < t {
			h.corrCPU[e.Args.Correlation] = start
		}
	}
}

// addExported keeps an event written by chrome.Write, rebuilt from its args.
func (m *legacyImporter) addExported(e *rawEvent) {
	x := &e.Args.Xfertop
	ev := x.Event(m.labels.id(x.L))
	switch {
	case ev.Start >= maxTime || ev.Start <= -maxTime || ev.End >= maxTime || ev.End <= -maxTime:
		m.warnEvent(e, "xfertop times out of range: event left out")
		return
	case ev.End < ev.Start:
		m.warnEvent(e, "xfertop end before start: taken as an instant")
		ev.End = ev.Start
	case ev.End-ev.Start > maxSpan:
		m.warnEvent(e, "xfertop duration longer than 24 h: event left out")
		return
	}
	ev.Bytes = m.checkBytes(e, "xfertop.b", ev.Bytes)
	m.f.exported = append(m.f.exported, ev)
	m.f.expOrigins = append(m.f.expOrigins, legacyMakeOrigin(m.f.index, e.Index, false))
}

// addGeneric keeps a slice of a Chrome trace from a tool xfertop does not know: a kernel on a
// track, one device per process and one stream per thread, so the timeline and the idle analyses
// still apply.
func (m *legacyImporter) addGeneric(e *rawEvent, start, end int64) {
	f := &m.f
	dev, ok := f.pids[string(e.Pid)]
	if !ok {
		dev = int32(len(f.pids))
		f.pids[string(e.Pid)] = dev
	}
	tk := string(e.Pid) + "/" + string(e.Tid)
	st, ok := f.tids[tk]
	if !ok {
		st = uint32(len(f.tids) + 1)
		f.tids[tk] = st
	}
	f.generic = append(f.generic, timeline.Event{Kind: timeline.KindKernel, Start: start, End: end, Queued: queuedUnknown,
		Device: dev, Peer: timeline.NoDevice, Stream: st, Label: f.genLabels.id(e.Name)})
	f.genOrigins = append(f.genOrigins, legacyMakeOrigin(f.index, e.Index, false))
}

// addStep keeps a ProfilerStep#N annotation as a step.
func (m *legacyImporter) addStep(e *rawEvent, start, end int64) {
	sm := stepName.FindSubmatch(e.Name)
	if sm == nil || e.Cat == "gpu_user_annotation" { // Kineto's copy of the CPU's step on the GPU
		return
	}
	n, err := strconv.ParseUint(string(sm[1]), 10, 32)
	if err != nil {
		m.warnEvent(e, "step number out of range: not taken as a step")
		return
	}
	ev := timeline.Event{Kind: timeline.KindStep, Start: start, End: end, Queued: queuedUnknown,
		Device: timeline.NoDevice, Peer: timeline.NoDevice, Aux: uint32(n), Label: m.labels.id(e.Name)}
	if m.multi {
		ev.Device = devicePending // the file's rank
	}
	m.append(ev, e.Index, false)
}

func (m *legacyImporter) append(ev timeline.Event, index int64, gpu bool) {
	m.im.Events = append(m.im.Events, ev)
	m.origins = append(m.origins, legacyMakeOrigin(m.f.index, index, gpu))
}

// addKineto converts a GPU op or a runtime call of a PyTorch profiler trace.
func (m *legacyImporter) addKineto(e *rawEvent, kind timeline.Kind, gpu bool, start, end int64, htaGPU bool) {
	a := &e.Args
	ev := timeline.Event{Kind: kind, Start: start, End: end, Queued: queuedUnknown, Peer: timeline.NoDevice, Label: m.labels.id(e.Name)}
	if a.Has&hasCorrelation != 0 {
		ev.Op = uint64(a.Correlation)
	}
	if !gpu {
		m.addRuntime(e, ev, htaGPU)
		return
	}
	dev, ok := m.gpuDevice(e)
	if !ok {
		return
	}
	ev.Device = dev
	if a.Has&hasCorrelation != 0 {
		ev.Queued = queuedPending
	}
	ev.Stream = m.gpuStream(e)
	switch kind {
	case timeline.KindMemcpy:
		ev.Sub = uint8(copyDir(string(e.Name), e.Cat))
		if a.Bad&hasBytes != 0 {
			m.warnEvent(e, "args.bytes is not an integer within ±2^62: taken as unknown")
		} else if a.Has&hasBytes != 0 {
			ev.Bytes = m.checkBytes(e, "args.bytes", a.Bytes)
		}
	case timeline.KindKernel:
		m.collective(e, &ev)
	}
	m.append(ev, e.Index, htaGPU)
}

// addRuntime keeps a runtime call (a launch, a copy call, a synchronisation) of the host thread
// whose process id it stores, and remembers when it launched its correlated GPU op.
func (m *legacyImporter) addRuntime(e *rawEvent, ev timeline.Event, htaGPU bool) {
	pid, _ := parseInt(e.Pid)
	ev.Kind, ev.Queued, ev.Aux = timeline.KindRuntime, ev.Start, uint32(pid)
	graph := isGraphLaunch(e.Name)
	if graph {
		ev.Kind, ev.Aux = timeline.KindGraphLaunch, 0
	}
	ev.Device = timeline.NoDevice
	if m.multi {
		ev.Device = devicePending
	}
	if e.Args.Has&hasCorrelation != 0 {
		m.f.launches[e.Args.Correlation] = ev.Start
		m.f.graphs[e.Args.Correlation] = graph
	}
	m.append(ev, e.Index, htaGPU)
}

// gpuDevice returns the device of a GPU op from args.device; with several files, the device is
// the file's rank, known at its end (devicePending). It is false when the op is left out.
func (m *legacyImporter) gpuDevice(e *rawEvent) (int32, bool) {
	a := &e.Args
	switch {
	case m.multi:
	case a.Has&hasDevice != 0:
		if !inRange(a.Device, 0, maxInt32) {
			m.warnEvent(e, "args.device %d is not a device id: event left out", a.Device)
			return 0, false
		}
		return int32(a.Device), true
	case a.Bad&hasDevice != 0:
		m.warnEvent(e, "args.device is not a device id: event left out")
		return 0, false
	}
	return devicePending, true
}

// gpuStream returns the stream of a GPU op: args.stream, else its tid; stream 0, the default
// stream, becomes 1<<31, since 0 means "no stream" in events.
func (m *legacyImporter) gpuStream(e *rawEvent) uint32 {
	a := &e.Args
	var stream uint32
	switch {
	case a.Has&hasStream != 0 && inRange(a.Stream, 0, math.MaxUint32):
		stream = uint32(a.Stream)
	case a.Has&hasStream != 0 || a.Bad&hasStream != 0:
		m.warnEvent(e, "args.stream is not a stream id: taken as the default stream")
	default:
		if tid, ok := parseInt(e.Tid); ok && inRange(tid, 0, math.MaxUint32) {
			stream = uint32(tid)
		}
	}
	if stream == 0 {
		stream = 1 << 31
	}
	return stream
}

// collective makes an NCCL kernel a collective of its operation, with its size and group size
// where the trace gives them.
func (m *legacyImporter) collective(e *rawEvent, ev *timeline.Event) {
	if !bytes.HasPrefix(e.Name, []byte("nccl")) {
		return
	}
	op, ok := kernelOp(e.Name, &e.Args)
	if !ok {
		return
	}
	ev.Kind, ev.Sub = timeline.KindCollective, uint8(op)
	ev.Bytes = m.ncclBytes(e)
	if a := &e.Args; a.Has&hasGroupSize != 0 {
		if inRange(a.GroupSize, 0, math.MaxUint16) {
			ev.Ranks = uint16(a.GroupSize)
		} else {
			m.warnEvent(e, "args.Group size %d is out of range (0 to 65535): taken as unknown", a.GroupSize)
		}
	}
}

// checkBytes returns b when it is a byte count xfertop can add up, and 0 (unknown) otherwise.
func (m *legacyImporter) checkBytes(e *rawEvent, field string, b int64) int64 {
	if !inRange(b, 0, maxEventBytes) {
		m.warnEvent(e, "%s %d is out of range (0 to %s): taken as unknown", field, b, sizeText(maxEventBytes))
		return 0
	}
	if m.totalBytes+b > maxTotalBytes {
		m.warnEvent(e, "%s %d would take the trace's total past %s: taken as unknown", field, b, sizeText(maxTotalBytes))
		return 0
	}
	m.totalBytes += b
	return b
}

// ncclBytes is the message size newer PyTorch profilers attach to NCCL kernels, when present.
func (m *legacyImporter) ncclBytes(e *rawEvent) int64 {
	a := &e.Args
	if a.Bad&(hasInNelems|hasOutNelems) != 0 {
		m.warnEvent(e, "args.In/Out msg nelems is not an integer within ±2^62: size taken as unknown")
		return 0
	}
	n := max(a.InNelems, a.OutNelems)
	if n == 0 {
		return 0
	}
	size := dtypeSize[a.DType]
	if size == 0 {
		size = 1
	}
	if !inRange(n, 0, maxEventBytes) || !inRange(min(a.InNelems, a.OutNelems), 0, maxEventBytes) {
		m.warnEvent(e, "args.In/Out msg nelems %d is out of range (0 to 2^40): size taken as unknown", n)
		return 0
	}
	return m.checkBytes(e, "message size", n*size)
}

// endFile resolves what the file's end tells: its rank, its kind (Kineto, generic, xfertop's own),
// and the launch time of each GPU op.
func (m *legacyImporter) endFile(h *header) {
	f, im := &m.f, m.im
	if h.Metadata != nil {
		im.Events, m.origins = im.Events[:f.lo], m.origins[:f.lo]
		im.Events = append(im.Events, f.exported...)
		m.origins = append(m.origins, f.expOrigins...)
		im.Format, im.Exported = "xfertop-chrome", h.Metadata
		if v, ok := h.Metadata["epoch_unix_ns"]; ok {
			im.EpochUnixNs, _ = strconv.ParseInt(v, 10, 64)
		}
		m.f = legacyFile{}
		return
	}
	rank := int32(f.index)
	switch {
	case h.HasRank && inRange(h.Rank, 0, maxInt32):
		rank = int32(h.Rank)
	case h.HasRank || h.BadRank:
		m.warn("%s: distributedInfo.rank is not a rank: the file's position (%d) is used", f.name, f.index)
	}
	if !f.gpu {
		im.Format = "chrome"
		im.Events, m.origins = im.Events[:f.lo], m.origins[:f.lo]
		for i, ev := range f.generic {
			ev.Label = m.labels.id([]byte(f.genLabels.strs.Lookup(ev.Label)))
			im.Events = append(im.Events, ev)
			m.origins = append(m.origins, f.genOrigins[i])
		}
		m.f = legacyFile{}
		return
	}
	for i := f.lo; i < len(im.Events); i++ {
		ev := &im.Events[i]
		if ev.Device == devicePending {
			ev.Device = rank
		}
		if ev.Queued == queuedPending {
			ev.Queued = queuedUnknown
			if q, ok := f.launches[int64(ev.Op)]; ok {
				ev.Queued = q
				if f.graphs[int64(ev.Op)] && ev.Kind.IsBusy() {
					ev.Aux |= timeline.AuxCaptured
				}
			}
		}
	}
	m.f = legacyFile{}
}

// keep compacts im.Events and m.origins to the events for which ok is true.
func (m *legacyImporter) keep(ok func(i int) bool) {
	n := 0
	for i := range m.im.Events {
		if ok(i) {
			m.im.Events[n], m.origins[n] = m.im.Events[i], m.origins[i]
			n++
		}
	}
	m.im.Events, m.origins = m.im.Events[:n], m.origins[:n]
}

// finish applies what needs every file: --like-hta's selection, the check of timestamps against
// each other, and time 0.
func (m *legacyImporter) finish() *Imported {
	im := m.im
	if m.opts.LikeHTA && len(m.stepNames) >= 2 {
		m.keep(m.selectedByHTA)
	}
	m.dropOutliers()
	base := int64(math.MaxInt64)
	last := int64(math.MinInt64)
	for _, ev := range im.Events {
		base, last = min(base, ev.Start), max(last, ev.End)
	}
	if len(im.Events) == 0 {
		base = 0
	}
	exported := im.Format == "xfertop-chrome"
	if !exported {
		im.EpochUnixNs = base // Kineto timestamps are µs since the Unix epoch
		legacyRebase(im.Events, base, last)
	}
	devices := map[int32]bool{}
	for _, ev := range im.Events {
		if ev.Device >= 0 && ev.Kind != timeline.KindRuntime && ev.Kind != timeline.KindGraphLaunch && ev.Kind != timeline.KindStep {
			devices[ev.Device] = true
		}
	}
	im.Devices = len(devices)
	im.Warnings = m.warnings
	if m.moreWarn > 0 {
		im.Warnings = append(im.Warnings, fmt.Sprintf("%d more warnings like these", m.moreWarn))
	}
	m.origins = nil
	return im
}

// selectedByHTA is Holistic Trace Analysis's default selection (hta/common/trace.py,
// _filter_irrelevant_gpu_kernels): per file, the CPU ops that start before the last ProfilerStep
// does (before the first CPU op when the file has no step), and the GPU ops launched by one of them,
// by correlation. A file with no CPU op keeps everything.
func (m *legacyImporter) selectedByHTA(i int) bool {
	o := m.origins[i]
	h := &m.hta[o.file()]
	if !h.hasCPU {
		return true
	}
	cut := h.minCPU
	if h.hasStep {
		cut = h.lastStep
	}
	if !o.gpu() {
		return m.im.Events[i].Start < cut
	}
	t, ok := h.corrCPU[int64(m.im.Events[i].Op)]
	return ok && t < cut
}

// dropOutliers leaves out, with a warning each, events more than 24 h away from the median start:
// a trace spans seconds to hours, and one timestamp decades away would otherwise make time 0, the
// span and every idle total meaningless.
func (m *legacyImporter) dropOutliers() {
	median, spread := legacyMedianStart(m.im.Events)
	if !spread {
		return
	}
	m.keep(func(i int) bool {
		ev := &m.im.Events[i]
		if d := ev.Start - median; d >= -maxSpan && d <= maxSpan {
			return true
		}
		o := m.origins[i]
		m.warn("%s: traceEvents[%d] %s: ts lies %s from the trace's other events (more than 24 h): event left out",
			m.names[o.file()], o.index(), shortName([]byte(m.im.Strings.Lookup(ev.Label))), span(ev.Start-median))
		return false
	})
}

// legacyRebase puts imported events on the import's time axis, time 0 at base, and sorts them by start.
// A launch time outside [base, last] belongs to a call that was left out: it becomes unknown (−1),
// as does QueuedUnknown.
func legacyRebase(evs []timeline.Event, base, last int64) {
	for i := range evs {
		ev := &evs[i]
		if ev.Queued == queuedUnknown || ev.Queued < base || ev.Queued > last {
			ev.Queued = -1
		} else {
			ev.Queued -= base
		}
		ev.Start -= base
		ev.End -= base
	}
	slices.SortStableFunc(evs, func(a, b timeline.Event) int { return cmp.Compare(a.Start, b.Start) })
}

// legacyMedianStart returns the median start of evs, and whether any two of them start more than
// MaxSpan apart (when not, there is nothing to leave out and the median is not computed).
func legacyMedianStart(evs []timeline.Event) (median int64, spread bool) {
	if len(evs) == 0 {
		return 0, false
	}
	lo, hi := evs[0].Start, evs[0].Start
	for _, ev := range evs {
		lo, hi = min(lo, ev.Start), max(hi, ev.Start)
	}
	if hi-lo <= maxSpan {
		return 0, false
	}
	starts := make([]int64, len(evs))
	for i, ev := range evs {
		starts[i] = ev.Start
	}
	slices.Sort(starts)
	return starts[len(starts)/2], true
}

// legacyImport imports r as Import did before imports streamed.
func legacyImport(name string, r io.Reader, opts Options) (*Imported, error) {
	m := newLegacyImporter(opts, false)
	if err := m.read(0, name, r); err != nil {
		return nil, err
	}
	im := m.finish()
	im.Source = name
	return im, nil
}

// legacyReadFiles imports files as ReadFiles did before imports streamed.
func legacyReadFiles(paths []string, opts Options) (*Imported, error) {
	m := newLegacyImporter(opts, len(paths) > 1)
	for i, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		err = m.read(i, p, f)
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	im := m.finish()
	im.Source = strings.Join(paths, ",")
	return im, nil
}
