package analysis

import (
	"github.com/xfertop/xfertop/analysis/diagnosis"
	"github.com/xfertop/xfertop/analysis/hostmap"
	"github.com/xfertop/xfertop/timeline"
)

// Labels resolves interned label ids (a timeline.Strings, or a console snapshot).
type Labels = timeline.Labels

// Analyzer runs every accumulator over one event stream. It is a timeline.Sink: the producer (or
// the console, on its frame tick) hands it each event once, in the order produced. It is not safe
// for concurrent use. A Result is read-only and later Emits never change it, so it can be read on
// another goroutine while Emit goes on; parts of it that did not change since the last Result
// (a device, a stream) are shared with the next one rather than rebuilt.
type Analyzer struct {
	meta        timeline.Meta
	from        int64 // the analysis covers the stream from this time on (StartAt)
	events      int64
	first, last int64
	seen        bool
	steps       steps
	window      *stepWindow
	transfers   *transfers
	p2p         *p2pIterations
	colls       *collectives
	barriers    *barriers
	comms       *comms
	named       named
	links       *links
	idle        *idleGaps
	breakdown   breakdown
	alerts      alerts
	telemetry   telemetry
	profiler    profilerCost
	diag        *diagnosis.Diagnosis
	// hosts is the one device→host map (analysis/hostmap): the links, the diagnosis and, through
	// Result.Hosts, the report, the console and the OTLP exporter all place devices by it.
	hosts *hostmap.Map
	// held are the events Emit was given and has not folded yet (flush): on a cluster they are
	// folded heldEvents at a time.
	held []timeline.Event
}

// New returns an analyzer for a stream described by m (idle mode, kernel-wait threshold, GPUs per host).
func New(m timeline.Meta) *Analyzer {
	a := &Analyzer{meta: m}
	a.Reset()
	return a
}

// Reset forgets everything folded so far (a replay seeking back starts over).
func (a *Analyzer) Reset() { a.StartAt(0) }

// StartAt forgets everything folded so far and analyses the stream from time t on, as a replay
// started or sought to t emits it: every event that ends at or after t, an op under way at t
// whole. Steps that began before t are not counted (the setup at their start may be before t,
// unseen), and the duration runs from t (or the first event, when later) to the last event's end.
func (a *Analyzer) StartAt(t int64) {
	named := a.hosts.Names() // the names a live source gave (NameHost) are the job's, not the stream's
	*a = Analyzer{meta: a.meta, from: max(t, 0), held: a.held[:0], transfers: newTransfers(), p2p: newP2PIterations(), colls: newCollectives(), barriers: newBarriers(), comms: newComms(),
		hosts: hostmap.New(a.meta), idle: newIdleGaps(a.meta.IdleMode, a.meta.KernelWaitNs)}
	for h, name := range named {
		a.hosts.NameHost(h, name)
	}
	a.links = newLinks(a.hosts, a.meta.LinkBytes, a.meta.FabricPortBps)
	a.steps = newSteps(a.from)
	a.window = &stepWindow{s: &a.steps, stale: true}
	a.steps.win, a.idle.win, a.breakdown.win = a.window, a.window, a.window
	a.diag = diagnosis.New(a.hosts)
	a.diag.SetLinkPeaks(a.meta.LinkPeaks)
	a.comms.seen = recordsComms(a.meta)
	a.comms.from = a.from
	a.colls.from = a.from
}

// aheadDevices is the highest device id, plus one, from which Emit holds events to fold them
// in batches, asking for each one's state ahead of its use: some 5 to 10 kB of state per device,
// so that below it (a host or a few) the analysis's state stays in a core's caches, and holding
// an event costs more than it saves.
const aheadDevices = 128

// heldEvents is how many events Emit holds on a cluster before it folds them (20 KiB): between
// two events of a simulation the engine's work evicts the analysis's state from the caches, and
// the analysis's the engine's; folded in a run, the lines the analysis shares between events (its
// accumulators' headers, the steps, the tables) stay in the caches from one event to the next,
// and each event's own state is asked for aheadEvents events before its turn, far enough ahead
// for the miss to be over when it comes.
const heldEvents = 256

// aheadEvents is how many events ahead of the one folded flush asks for an event's state: enough
// for a miss to memory to end meanwhile, few enough that the lines asked for are still in the
// caches at their turn.
const aheadEvents = 8

// Meta returns the description the analyzer was made with.
func (a *Analyzer) Meta() timeline.Meta { return a.meta }

// Emit folds one event. On a cluster (aheadDevices) it holds the event, a copy, and folds it
// with the ones before and after it, in the order given, before anything reads a result: no
// result, finding or count differs from folding each event at once.
func (a *Analyzer) Emit(e *timeline.Event) {
	a.events++
	if len(a.breakdown.devs) < aheadDevices {
		a.fold(e)
		return
	}
	a.held = append(a.held, *e)
	if len(a.held) >= heldEvents {
		a.flush()
	}
}

// flush folds the events held, in order. Each event's stream, device and rank state is asked for
// aheadEvents events before its turn, and the ends of its device's interval sets (found from that
// state, once arrived) half as far ahead.
func (a *Analyzer) flush() {
	h := a.held
	for i := range min(aheadEvents, len(h)) {
		a.prefetch(&h[i])
	}
	for i := range h {
		if j := i + aheadEvents; j < len(h) {
			a.prefetch(&h[j])
		}
		if j := i + aheadEvents/2; j < len(h) {
			a.breakdown.prefetchEnds(&h[j])
		}
		a.fold(&h[i])
	}
	a.held = h[:0]
}

// prefetch asks for the lines of e's stream, device and rank state: a hint, which changes nothing.
func (a *Analyzer) prefetch(e *timeline.Event) {
	a.idle.prefetch(e)
	a.breakdown.prefetch(e)
	a.diag.Prefetch(e)
}

// fold folds one event into every accumulator. The steps go before the idle gaps and the
// breakdown, which read the window they mark.
func (a *Analyzer) fold(e *timeline.Event) {
	if !a.seen {
		a.first, a.last, a.seen = e.Start, e.End, true
	}
	a.first, a.last = min(a.first, e.Start), max(a.last, e.End)
	a.hosts.Add(e) // before every fold that places the device
	a.steps.add(e)
	a.transfers.add(e)
	a.p2p.add(e)
	a.colls.add(e)
	a.barriers.add(e)
	a.comms.add(e)
	a.named.add(e)
	a.links.add(e)
	a.alerts.add(e)
	a.telemetry.add(e)
	a.profiler.add(e)
	if e.End >= a.from {
		a.diag.Add(e)
	}
	a.idle.add(e)
	a.breakdown.add(e)
}

// NameHost gives host h the name a live source learned (timeline.HostNamer): the host map
// (Result.Hosts) carries it, and so every view, report and finding that names the host.
func (a *Analyzer) NameHost(h int32, name string) { a.hosts.NameHost(h, name) }

// Diagnose gives the diagnosis alone an event that ends before the time the analysis starts at
// (StartAt), in the order produced, before any Emit: a replay sought to t reads the recording up
// to t again for it, so that a finding's onset is the first evidence in the recording, not the
// first after the seek, while the numbers still cover the stream from t on. Other events are
// left to Emit.
func (a *Analyzer) Diagnose(e *timeline.Event) {
	a.flush()
	if e.End < a.from {
		a.hosts.Add(e)
		a.diag.Add(e)
	}
}

// Pending gives the diagnosis what a live source has in flight at time now (its InFlight), so
// that hangs are named while they last, before a watchdog ends the run.
func (a *Analyzer) Pending(now int64, inflight []timeline.Event) {
	a.flush()
	a.diag.Pending(now, inflight)
}

// SetHangFloor sets the least a wait must last to be called a hang (diagnosis.SetHangFloor).
func (a *Analyzer) SetHangFloor(ns int64) { a.diag.SetHangFloor(ns) }

// Events returns how many events were given to Emit (folded, or held to be).
func (a *Analyzer) Events() int64 { return a.events }

// Result is every number xfertop reports about a stream so far.
type Result struct {
	Events     int64
	FirstNs    int64 // the first event's start, or the time the analysis starts at (StartAt) when later
	DurationNs int64 // last event end − FirstNs
	Steps      Steps
	Transfers  Transfers
	// SendRecv is the grouped send/recv iterations (nccl-tests' sendrecv_perf rows).
	SendRecv    []P2PIteration
	Collectives Collectives
	CommCache   CommCache
	Groups      Groups
	// Communicators are the communicators and process groups a source names without a cache of
	// them (Flight Recorder's process groups, NCCL RAS's communicators), by id.
	Communicators []Communicator
	Barriers      Barriers
	StreamIdle    StreamGaps
	Breakdown     Breakdown
	Links         Links
	Alerts        []Alert
	AlertCount    int64
	Telemetry     []DeviceTelemetry
	// ProfilerCost is the NCCL profiler plugin's own cost, per rank (device) that reported it.
	ProfilerCost []ProfilerCost
	// Findings are the diagnosis's verdicts (analysis/diagnosis), worst first: the culprit rank,
	// GPU, host or link of a slowdown or hang, with the evidence.
	Findings []diagnosis.Finding
	// Hosts places each device on its host, as the links and the findings were placed: the one
	// map every view, the report and the exporter read (read-only).
	Hosts *hostmap.Map
}

// Result computes the results so far. labels resolves alert messages. Its cost follows what
// changed since the last call: a console asks every frame, over hundreds of devices.
func (a *Analyzer) Result(labels Labels) *Result {
	a.flush()
	r := &Result{Events: a.events, Steps: a.steps.result(), Transfers: a.transfers.result(), SendRecv: a.p2p.result(), Collectives: a.colls.result(),
		Barriers: a.barriers.result(), StreamIdle: a.idle.result(), Breakdown: a.breakdown.result(), Links: a.links.result(),
		Telemetry: a.telemetry.result(), ProfilerCost: a.profiler.result()}
	if a.seen {
		// Sought to a time, the span starts there; from the beginning, at the first event, which
		// may lie before time 0 (a source that started before the session).
		r.FirstNs = a.first
		if a.from > 0 {
			r.FirstNs = max(a.first, min(a.from, a.last))
		}
		r.DurationNs = a.last - r.FirstNs
	}
	idleCauses(r.Breakdown.Devices, r.StreamIdle.Devices)
	markNoKernels(r, a.meta)
	r.CommCache, r.Groups = a.comms.result()
	r.Communicators = a.named.result(labels)
	r.Alerts, r.AlertCount = a.alerts.result(labels)
	r.Findings = a.diag.Result(labels)
	r.Hosts = a.hosts.Snapshot()
	quoteRoots(r.Alerts, a.diag, labels)
	return r
}

// idleCauses gives each device's time split the top cause of its streams' gaps where the device
// sat idle (DeviceTime.IdleCause), so that the idle figure and its cause are one account: no cause
// beside no idle time. Both lists are by device; times is the Result's own (built each call).
func idleCauses(times []DeviceTime, gaps []DeviceGaps) {
	j := 0
	for i := range times {
		for j < len(gaps) && gaps[j].Device < times[i].Device {
			j++
		}
		if j < len(gaps) && gaps[j].Device == times[i].Device && times[i].IdleNs > 0 {
			times[i].IdleCause = gaps[j].TopCause
		}
	}
}
