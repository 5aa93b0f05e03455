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
	*a = Analyzer{meta: a.meta, from: max(t, 0), transfers: newTransfers(), p2p: newP2PIterations(), colls: newCollectives(), barriers: newBarriers(), comms: newComms(),
		hosts: hostmap.New(a.meta), idle: newIdleGaps(a.meta.IdleMode, a.meta.KernelWaitNs)}
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

// aheadDevices is the highest device id, plus one, from which Emit asks for an event's state
// ahead of its use: some 5 to 10 kB of state per device, so that below it (a host or a few) the
// analysis's state stays in a core's caches.
const aheadDevices = 128

// Meta returns the description the analyzer was made with.
func (a *Analyzer) Meta() timeline.Meta { return a.meta }

// Emit folds one event.
func (a *Analyzer) Emit(e *timeline.Event) {
	a.events++
	if !a.seen {
		a.first, a.last, a.seen = e.Start, e.End, true
	}
	a.first, a.last = min(a.first, e.Start), max(a.last, e.End)
	a.hosts.Add(e) // before every fold that places the device
	// On a cluster the state of an event's stream, device and rank is rarely in the caches: ask
	// for it now, and fold the event into the accumulators that keep no such state first, so that
	// the lines arrive meanwhile (and the ends of the device's interval sets, found from its state,
	// halfway). The steps go before the idle gaps and the breakdown, which read the window they
	// mark. On a few devices the state stays in the caches, and asking costs more than it saves.
	ahead := len(a.breakdown.devs) >= aheadDevices
	if ahead {
		a.idle.prefetch(e)
		a.breakdown.prefetch(e)
		a.diag.Prefetch(e)
	}
	a.steps.add(e)
	a.transfers.add(e)
	a.p2p.add(e)
	a.colls.add(e)
	a.barriers.add(e)
	a.comms.add(e)
	if ahead {
		a.breakdown.prefetchEnds(e)
	}
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

// Diagnose gives the diagnosis alone an event that ends before the time the analysis starts at
// (StartAt), in the order produced, before any Emit: a replay sought to t reads the recording up
// to t again for it, so that a finding's onset is the first evidence in the recording, not the
// first after the seek, while the numbers still cover the stream from t on. Other events are
// left to Emit.
func (a *Analyzer) Diagnose(e *timeline.Event) {
	if e.End < a.from {
		a.hosts.Add(e)
		a.diag.Add(e)
	}
}

// Pending gives the diagnosis what a live source has in flight at time now (its InFlight), so
// that hangs are named while they last, before a watchdog ends the run.
func (a *Analyzer) Pending(now int64, inflight []timeline.Event) { a.diag.Pending(now, inflight) }

// SetHangFloor sets the least a wait must last to be called a hang (diagnosis.SetHangFloor).
func (a *Analyzer) SetHangFloor(ns int64) { a.diag.SetHangFloor(ns) }

// Events returns how many events were folded.
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
