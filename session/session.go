package session

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/analysis/diagnosis"
	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/engine/topology"
	"github.com/xfertop/xfertop/otel"
	"github.com/xfertop/xfertop/probes/nvml"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/scenario"
	"github.com/xfertop/xfertop/timeline"
)

// Config is everything a run needs.
type Config struct {
	Scenario string            // built-in name or path; "" is scenario.DefaultName
	Sets     map[string]string // knob overrides
	Topology string            // "" keeps the scenario's
	Hosts    int               // scales the topology to this many hosts; 0 keeps its own
	Backend  string            // "" or "sim"
	Seed     int64
	Speed    float64       // 0: unpaced
	Steps    int           // 0: the scenario's
	Duration time.Duration // 0: no limit
	// Warn, when set, is told of what will make the run take long (the simulator's sim.Config.Warn).
	Warn func(msg string)
	// Record, when set, records the session to this .xfr file from its first event.
	Record string
	// RecordFlushEvery is how often the recording's partial batches reach the file (0:
	// recordings.DefaultFlushEvery). Longer than the run, chunks are cut by event count alone.
	RecordFlushEvery time.Duration
	// Epoch is the wall-clock time of simulated time 0 (zero: now).
	Epoch time.Time
	// Export, when set, exports the session's spans over OTLP.
	Export *otel.Config
	// NVML samples GPU telemetry through NVML every NVMLInterval (default 500 ms) beside the run.
	NVML         bool
	NVMLInterval time.Duration
	// Fit lets the cuda backend run a topology with more ranks than GPUs (rank r on GPU r mod n).
	Fit bool
	// Window, when positive, keeps the most recent events in a bounded, concurrent
	// timeline.Window (for the console) instead of every event in Store, so a run can go on for
	// ever in bounded memory. AutoWindow sizes it to the topology's GPUs (AutoWindowFor).
	Window int
	// Faults are injected into the simulated run (--fault), besides the scenario file's own.
	Faults []fault.Fault
}

// ConfigError is a problem with the configuration (flags, scenario file, knobs) found before
// anything ran. The command exits with status 2 on it.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *ConfigError) Unwrap() error { return e.Err }

// RecordingError is a recording (Config.Record) that could not be created, or could not be written
// to the end (a full disk, say). What was written before a write failure stays readable.
type RecordingError struct {
	Path   string
	Create bool // the file could not be created: nothing ran
	Err    error
}

// Error names the recording and the root cause ("no space left on device"), without the layers
// of wrapping in between; Unwrap keeps them.
func (e *RecordingError) Error() string {
	if e.Create {
		return fmt.Sprintf("cannot create recording %s: %v", e.Path, rootCause(e.Err))
	}
	return fmt.Sprintf("recording %s failed: %v", e.Path, rootCause(e.Err))
}

// Unwrap returns the underlying error.
func (e *RecordingError) Unwrap() error { return e.Err }

// rootCause is the innermost error of a chain of single wraps: the operating system's reason.
func rootCause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

// Prepared is a run ready to start: scenario resolved, backend and client built. A headless run
// folds its events into an analyzer as they happen (no event is kept); a console run keeps the most
// recent in a window instead, and the console analyses them.
type Prepared struct {
	cfg      Config
	scenario *scenario.Scenario
	strs     *timeline.Strings
	client   *engine.Client
	backend  engine.Backend
	mapping  string        // how ranks were placed on GPUs (cuda)
	faults   []fault.Fault // injected into the run: --fault, then the scenario's own
	topo     engine.Topology
	window   *timeline.Window   // when Config.Window is set
	analyzer *analysis.Analyzer // otherwise
	reach    *faultReach        // with the analyzer, when a fault acts on GPUs
	fan      *fanout
	recorder *recordings.Recorder
	exporter *otel.Exporter
	progress progress
	hangs    *hangReach // with the analyzer, when a hang fault is injected
}

// Prepare resolves cfg. Extra sinks receive every event besides the store.
func Prepare(cfg Config, sinks ...timeline.Sink) (*Prepared, error) {
	if cfg.Scenario == "" {
		cfg.Scenario = scenario.DefaultName
	}
	switch cfg.Backend {
	case "", "sim", "cuda":
	default:
		return nil, &ConfigError{fmt.Errorf("unknown backend %q (sim, or cuda in a build with -tags cuda)", cfg.Backend)}
	}
	f, err := scenario.Load(cfg.Scenario)
	if err != nil {
		return nil, &ConfigError{err}
	}
	topo, err := loadTopology(f, cfg.Topology)
	if err != nil {
		return nil, &ConfigError{err}
	}
	if cfg.Hosts != 0 {
		if topo, err = topology.WithHosts(topo, cfg.Hosts); err != nil {
			return nil, &ConfigError{fmt.Errorf("--hosts %d: topology %s: %w", cfg.Hosts, topo.Name, err)}
		}
	}
	sc, err := scenario.Resolve(f, cfg.Sets, topo)
	if err != nil {
		if cfg.Topology != "" && f.Topology != "" && topo.Name != f.Topology && fitsOwn(f, cfg.Sets) {
			// The scenario was written for another topology, on which it resolves with the same
			// knobs: the topology is what does not fit, so name the one that does. An error that
			// the scenario's own topology gives too (an unknown knob, a tensor-parallel size no
			// host divides) is about the knobs: sending a 1,024-GPU user to 16 GPUs fixes nothing.
			err = fmt.Errorf("%w (scenario %s does not fit topology %s; it was written for %s: --topology %s)", err, f.Name, topo.Name, f.Topology, f.Topology)
		}
		return nil, &ConfigError{err}
	}
	strs := timeline.NewStrings()
	fan := &fanout{}
	// The faults are known before the description (Meta) goes to the analysis, the export and
	// the recording.
	p := &Prepared{cfg: cfg, scenario: sc, strs: strs, topo: topo, fan: fan,
		faults: append(append([]fault.Fault(nil), cfg.Faults...), f.Faults...)}
	if cfg.Window == AutoWindow {
		cfg.Window = AutoWindowFor(p.Meta().Devices)
		p.cfg.Window = cfg.Window
	}
	if cfg.Window > 0 {
		p.window = timeline.NewWindow(cfg.Window, strs)
		fan.sinks = append(fan.sinks, p.window)
	} else {
		p.analyzer = analysis.New(p.Meta())
		fan.sinks = append(fan.sinks, p.analyzer)
		if p.reach = newFaultReach(p.faults, topo); p.reach != nil {
			fan.sinks = append(fan.sinks, p.reach)
		}
	}
	fan.sinks = append(fan.sinks, sinks...)
	fan.sinks = append(fan.sinks, &p.progress)
	if p.analyzer != nil {
		if p.hangs = newHangReach(p.faults, topo); p.hangs != nil {
			fan.sinks = append(fan.sinks, p.hangs)
		}
	}
	if cfg.NVML {
		fan.inbox = &inbox{strs: strs}
		if cfg.Epoch.IsZero() {
			cfg.Epoch = time.Now()
			p.cfg.Epoch = cfg.Epoch
		}
	}
	if cfg.Export != nil {
		ec := *cfg.Export
		if cfg.Epoch.IsZero() {
			cfg.Epoch = time.Now()
			p.cfg.Epoch = cfg.Epoch
		}
		ec.Epoch, ec.Scenario = cfg.Epoch, sc.File.Name
		ec.Meta = p.Meta()
		x, err := otel.New(context.Background(), ec, strs)
		if err != nil {
			return nil, &ConfigError{fmt.Errorf("--otlp: %w", err)}
		}
		p.exporter = x
		fan.sinks = append(fan.sinks, x)
	}
	if cfg.Record != "" {
		if cfg.Epoch.IsZero() {
			cfg.Epoch = time.Now()
			p.cfg.Epoch = cfg.Epoch
		}
		if err := p.startRecording(); err != nil {
			// Not a configuration error: the path is fine, the file system refused it.
			return nil, &RecordingError{Path: cfg.Record, Create: true, Err: err}
		}
	}
	var backend engine.Backend
	faults := p.faults
	if cfg.Backend == "cuda" {
		// Real GPUs cannot be made to throttle, lose link speed or drop a NIC on request: the
		// cuda backend holds back a rank's launches (a slow host, a hang before a collective)
		// and refuses the rest, saying which and why, rather than run healthy.
		for _, f := range faults {
			if err := f.OnRealGPUs(); err != nil {
				return nil, &ConfigError{fmt.Errorf("fault %s: %w (the simulator injects it: --backend sim)", f, err)}
			}
		}
		b, mapping, err := newCUDA(cfg, topo, sc.Options, faults, fan, strs)
		if err != nil {
			return nil, &ConfigError{err}
		}
		backend, p.mapping = b, mapping
	} else {
		s, err := sim.New(sim.Config{Topology: topo, Seed: cfg.Seed, Speed: cfg.Speed, Model: sim.ModelOf(topo), Faults: faults, Warn: cfg.Warn}, fan, strs)
		if err != nil {
			return nil, &ConfigError{err}
		}
		backend = s
	}
	p.backend = backend
	p.client = engine.NewClient(backend, fan, sc.Options)
	return p, nil
}

// fitsOwn reports whether the scenario resolves with sets on the topology it was written for.
func fitsOwn(f *scenario.File, sets map[string]string) bool {
	own, err := loadTopology(f, "")
	if err != nil {
		return false
	}
	_, err = scenario.Resolve(f, sets, own)
	return err == nil
}

// loadTopology returns the topology a run uses: flag (--topology: a built-in's name or a file's
// path), else the scenario's `topology` (a path there is relative to the scenario file), else the
// default.
func loadTopology(f *scenario.File, flag string) (engine.Topology, error) {
	name := flag
	if name == "" {
		name = f.Topology
		if name != "" && topology.IsPathLike(name) && !filepath.IsAbs(name) && !strings.HasPrefix(f.Source, "builtin:") {
			name = filepath.Join(filepath.Dir(f.Source), name)
		}
	}
	if name == "" {
		name = topology.Default
	}
	t, err := topology.Load(name)
	if err != nil {
		if flag != "" {
			return t, fmt.Errorf("--topology: %w", err)
		}
		return t, fmt.Errorf("%s: topology: %w", f.Source, err)
	}
	return t, nil
}

// ErrStopped is the cause of a run's cancellation when its user stopped it (Live.Stop): the run
// then ended normally.
var ErrStopped = errors.New("stopped by the user")

// Outcome is how a run went.
type Outcome struct {
	Steps int
	// Wall is how long the workload ran, before the recording and the export were closed.
	Wall time.Duration
	// Ended is set when the run stopped early: a watchdog alert, a deadlock, a cancellation.
	Ended error
}

// Run executes the prepared workload.
// When recording, the recording is closed with the outcome whatever happened, so what was
// recorded is kept; a failure to close it is returned if nothing else failed.
//
// A recording that can no longer be written (a full disk) stops the run: the outcome's Ended and
// the returned error are then a *RecordingError, the outcome describes what ran, and the recording
// keeps every chunk written before the failure.
func (p *Prepared) Run(ctx context.Context) (Outcome, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer p.progress.publish() // the last events, after the probe's (stopProbe drains them)
	stopWatch := p.watchRecorder(ctx, cancel)
	var stopProbe func()
	if p.cfg.NVML {
		stopProbe = p.startProbe(ctx)
	}
	begin := time.Now()
	res, err := p.scenario.Run(ctx, p.client, p.fan, scenario.RunConfig{Steps: p.cfg.Steps, Duration: p.cfg.Duration, Seed: p.cfg.Seed})
	out := Outcome{Steps: res.Steps, Ended: res.Err, Wall: time.Since(begin)}
	if res.Err != nil && !errors.Is(res.Err, engine.ErrCanceled) && (p.analyzer != nil || p.recorder != nil) {
		// A watchdog or a deadlock stopped the run. After a deadlock nothing could move any more,
		// so what is in flight is what a look at any time since the hang began would have shown;
		// after the watchdog, the ops that had just started would have finished: the look is at
		// the last time they were seen. The diagnosis names the hang's root from it (and dates it
		// by when the waits began). The recording keeps the same look, so that its replay's
		// diagnosis is given what this one was and names the same root: ops that never ended are
		// in no Events chunk.
		inflight := p.InFlight(nil)
		now := diagnosis.LastSeen(inflight)
		var dl *engine.DeadlockError
		if errors.As(res.Err, &dl) {
			now = math.MaxInt64 / 2
		}
		if p.analyzer != nil {
			p.analyzer.Pending(now, inflight)
		}
		if p.reach != nil {
			// An op stuck in flight is its GPU's work while a fault was in effect too (a hang in
			// the op: nothing of its rank ends after it, yet the fault took effect).
			for i := range inflight {
				p.reach.Emit(&inflight[i])
			}
		}
		if p.recorder != nil {
			p.recorder.SetInFlight(now, inflight)
		}
	}
	stopWatch()
	if stopProbe != nil {
		stopProbe() // before the recording and the export close: its last samples belong to the run
	}
	if err != nil {
		out.Ended = nil
	}
	if errors.Is(out.Ended, engine.ErrCanceled) && errors.Is(context.Cause(ctx), ErrStopped) {
		out.Ended = nil // the user ended it (q in the console): a normal end, not an early one
	}
	if p.recorder != nil {
		if werr := p.recorder.Err(); werr != nil && errors.Is(out.Ended, engine.ErrCanceled) {
			out.Ended = &RecordingError{Path: p.cfg.Record, Err: werr} // the recorder stopped the run, not the caller
		}
		if cerr := p.stopRecording(out, err); cerr != nil && err == nil {
			err = cerr
		}
	}
	if p.exporter != nil {
		// The collector has the export's shutdown budget (--otlp-shutdown-timeout) to take the last
		// spans; what it does not take is counted as dropped, and the run's result stands.
		_ = p.exporter.Close(context.Background())
	}
	return out, err
}

// watchRecorder cancels the run when the recording fails; the returned function stops watching.
func (p *Prepared) watchRecorder(ctx context.Context, cancel context.CancelFunc) func() {
	if p.recorder == nil {
		return func() {}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-p.recorder.Failed():
			cancel()
		case <-ctx.Done():
		case <-stop:
		}
	}()
	return func() {
		close(stop)
		<-done
	}
}

// ExportStats returns the export's counters (nil when not exporting).
func (p *Prepared) ExportStats() *otel.Stats {
	if p.exporter == nil {
		return nil
	}
	s := p.exporter.Stats()
	return &s
}

// Meta describes the run: the same description in its recording, its report and the console.
func (p *Prepared) Meta() timeline.Meta {
	m := timeline.Meta{Source: p.backendName(), Scenario: p.scenario.File.Name, Knobs: p.scenario.Knobs, Backend: p.backendName(),
		Topology: p.topo.Name, Devices: p.topo.Devices(), GPUsPerHost: p.topo.GPUsPerHost, Seed: p.cfg.Seed,
		IdleMode: timeline.IdleEngine, KernelWaitNs: analysis.DefaultKernelWaitNs, EpochUnixNs: p.cfg.Epoch.UnixNano(),
		Writer: Writer, Mapping: p.mapping}
	for _, f := range p.faults {
		m.Faults = append(m.Faults, f.String())
	}
	if p.backendName() == "sim" {
		m.LinkPeaks = SimPeaks(p.topo)
		m.FabricPortBps = p.topo.LeafPortBps() // 0 without a rail fabric: no ports are reported
		m.LinkBytes = true                     // the simulator reports what each link carried (KindLinkBytes)
	}
	return m
}

// Report is the report of a headless run that ended with o. It is nil for a console run, whose
// console analyses its window.
func (p *Prepared) Report(o Outcome) *report.Report {
	if p.analyzer == nil {
		return nil
	}
	run := report.Run{DroppedEvents: p.Dropped(), Export: ReportExport(p.ExportStats())}
	if o.Ended != nil {
		run.Ended = o.Ended.Error()
	}
	res := p.analyzer.Result(p.strs)
	if res.Events > 0 {
		run.Warnings = append(run.Warnings, p.hangs.warnings(o.Ended == nil, res.FirstNs+res.DurationNs)...)
		run.Warnings = append(run.Warnings, unreachedFaults(p.faults, res.FirstNs+res.DurationNs)...)
		run.Warnings = append(run.Warnings, p.reach.warnings(res.FirstNs+res.DurationNs)...)
	}
	return report.Build(res, p.Meta(), run)
}

// unreachedFaults says which faults never began: their onset came after the run's last event
// (end, ns of simulated time). Listed as injected and silent in every figure, such a fault would
// read as a healthy verdict on it.
func unreachedFaults(faults []fault.Fault, end int64) []string {
	var out []string
	for _, f := range faults {
		if f.At > end {
			out = append(out, fmt.Sprintf("fault %s never began: its onset (%v) comes after the run ended (%v); give more --steps or a --duration past it",
				f, time.Duration(f.At), time.Duration(end).Round(time.Microsecond)))
		}
	}
	return out
}

// Snapshot returns the events a console run holds now (empty for a headless run).
func (p *Prepared) Snapshot() timeline.Snapshot {
	if p.window == nil {
		return timeline.Snapshot{}
	}
	return p.window.Snapshot()
}

// Speed is the pace the run was asked for (0: unpaced).
func (p *Prepared) Speed() float64 { return p.cfg.Speed }

// Strings is the run's label table. Like the events, it belongs to the producer's goroutine.
func (p *Prepared) Strings() *timeline.Strings { return p.strs }

// EndedByAlert reports whether the outcome is a watchdog alert or a deadlock.
func (o Outcome) EndedByAlert() bool {
	var wd *engine.WatchdogError
	var dl *engine.DeadlockError
	return errors.As(o.Ended, &wd) || errors.As(o.Ended, &dl)
}

// fanout hands every event to each sink in turn, on the producer's goroutine. Events from other
// goroutines (the NVML probe) wait in the inbox and are passed on with the producer's next event.
type fanout struct {
	sinks []timeline.Sink
	inbox *inbox
}

func (f *fanout) Emit(e *timeline.Event) {
	if f.inbox != nil && f.inbox.pending.Load() {
		f.drain()
	}
	for _, s := range f.sinks {
		s.Emit(e)
	}
}

// NameHost hands a host's name to the sinks that take names (timeline.HostNamer): a replay
// passes on those its recording holds, as the live run did.
func (f *fanout) NameHost(h int32, name string) {
	for _, s := range f.sinks {
		if n, ok := s.(timeline.HostNamer); ok {
			n.NameHost(h, name)
		}
	}
}

func (f *fanout) drain() {
	evs, msgs := f.inbox.take()
	for i := range evs {
		if msgs[i] != "" {
			evs[i].Label = f.inbox.strs.ID(msgs[i])
		}
		for _, s := range f.sinks {
			s.Emit(&evs[i])
		}
	}
}

// inbox holds events produced off the producer's goroutine until it passes them on.
type inbox struct {
	strs    *timeline.Strings // the session's table: only the producer's goroutine touches it
	mu      sync.Mutex
	evs     []timeline.Event
	msgs    []string
	pending atomic.Bool
}

func (in *inbox) put(e *timeline.Event, msg string) {
	in.mu.Lock()
	if len(in.evs) < 1<<16 { // a stalled producer must not let the inbox grow without bound
		in.evs = append(in.evs, *e)
		in.msgs = append(in.msgs, msg)
	}
	in.pending.Store(true)
	in.mu.Unlock()
}

func (in *inbox) take() ([]timeline.Event, []string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	evs, msgs := in.evs, in.msgs
	in.evs, in.msgs = nil, nil
	in.pending.Store(false)
	return evs, msgs
}

// ReportExport is the report's account of an OTLP export from its counters; nil when not exporting.
func ReportExport(s *otel.Stats) *report.Export {
	if s == nil {
		return nil
	}
	return &report.Export{Endpoint: s.Endpoint, Protocol: s.Protocol, State: s.State, SpansBuilt: s.SpansBuilt,
		SpansExported: s.SpansExported, SpansDropped: s.SpansDropped, EventsDropped: s.EventsDropped, DropReason: s.DropReason, StepsSkipped: s.StepsSkipped + s.StepsOverRate,
		StepsExported: s.StepsSampled, StepsOverRate: s.StepsOverRate, SampleRatio: s.SampleRatio, MaxRate: s.MaxRate,
		MetricPoints: s.MetricPoints, MetricPointsExported: s.MetricPointsExported, MetricPointsDropped: s.MetricPointsDropped}
}

// startProbe samples NVML beside the run; the returned function stops it and passes on what it
// sampled last.
func (p *Prepared) startProbe(ctx context.Context) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	epoch := p.cfg.Epoch
	probe := nvml.New(nvml.NewLibrary(""), p.cfg.NVMLInterval, p.fan.inbox.put, func() int64 { return time.Since(epoch).Nanoseconds() })
	go func() {
		defer close(done)
		_ = probe.Run(ctx) // an unusable NVML is reported by the probe as an alert
	}()
	return func() {
		cancel()
		<-done
		if p.fan.inbox.pending.Load() {
			p.fan.drain()
		}
	}
}
