package session

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/otel"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/timeline"
)

// Writer identifies the xfertop that wrote a recording.
const Writer = "xfertop 0.1"

// ErrNoEvents is returned for a recording that holds no events (a header only).
var ErrNoEvents = errors.New("no events")

// startRecording creates the recording and adds the recorder to the sinks.
func (p *Prepared) startRecording() error {
	w, err := recordings.Create(p.cfg.Record)
	if err != nil {
		return err
	}
	opts := []recordings.RecorderOption{recordings.FlushEvery(p.cfg.RecordFlushEvery)}
	if p.unpacedSim() {
		// Nothing here keeps time with the wall clock, so the recording waits for a slow disk
		// rather than drop events: which batches a dropping recorder loses depends on the disk and
		// the scheduler, and the same seed must record the same run.
		opts = append(opts, recordings.Lossless())
	}
	rec, err := recordings.NewRecorder(w, p.strs, p.Meta(), opts...)
	if err != nil {
		return err
	}
	p.fan.sinks = append(p.fan.sinks, rec)
	p.recorder = rec
	return nil
}

// unpacedSim reports whether the run is a simulation run as fast as it can go (Speed 0): the
// headless report's and a recording's, where no one watches the wall clock.
func (p *Prepared) unpacedSim() bool { return p.cfg.Backend != "cuda" && p.cfg.Speed == 0 }

func (p *Prepared) stopRecording(o Outcome, runErr error) error {
	ended := ""
	switch {
	case o.Ended != nil:
		ended = o.Ended.Error()
	case runErr != nil:
		ended = runErr.Error()
	}
	if err := p.recorder.Close([][2]string{{"ended", ended}, {"steps", strconv.Itoa(o.Steps)}}); err != nil {
		return &RecordingError{Path: p.cfg.Record, Err: err}
	}
	return nil
}

// Dropped returns the events the recorder dropped (0 when not recording).
func (p *Prepared) Dropped() int64 {
	if p.recorder == nil {
		return 0
	}
	return p.recorder.Dropped()
}

// ReplayConfig says how to replay a recording.
type ReplayConfig struct {
	Export  *otel.Config // export the replayed spans over OTLP, on the recording's own epoch
	Path    string
	Speed   float64 // simulated seconds per wall second; 0 as fast as possible
	From    time.Duration
	Salvage bool
	// Growth, when set, says the recording is still being written (an import in the background):
	// the console's replay (StartReplay) plays it as it grows, and seeks within what is written.
	Growth *recordings.Growth
	// Clock paces the console's replay (StartReplay); nil is the wall clock. Tests set their own,
	// to stop a replay at a chosen position.
	Clock Clock
}

// Replayed is a recording read back and analysed.
type Replayed struct {
	Export   *otel.Stats
	Meta     timeline.Meta
	Outcome  map[string]string
	Dropped  int64
	Warnings []string
	Strings  *timeline.Strings
	// EndedByAlert says a watchdog alert or a deadlock stopped the recorded run: its recording
	// holds what was in flight then (the InFlight chunk, written only for such an end).
	EndedByAlert bool
	analyzer     *analysis.Analyzer
}

// Replay reads a recording back, analysing its events and emitting them to the extra sinks too,
// paced to the wall clock at cfg.Speed and starting at cfg.From. It is the same event stream the
// live run produced. From cfg.From on, the totals cover what ends then or later, while the
// diagnosis also reads the recording before it, so that a finding's onset is where the recording
// first shows the fault, as a console sought to cfg.From says. A recording without events is
// ErrNoEvents.
func Replay(ctx context.Context, cfg ReplayConfig, sinks ...timeline.Sink) (*Replayed, error) {
	r, err := recordings.Open(cfg.Path, recordings.Options{Salvage: cfg.Salvage})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	an := analysis.New(r.Meta())
	an.StartAt(cfg.From.Nanoseconds())
	if cfg.From > 0 {
		// The totals cover the replay from From on, but a finding's onset is where the recording
		// first shows it, as the console's seek to From says (ReplaySource.diagnoseBefore).
		if err := diagnoseRecordingBefore(ctx, an, cfg.Path, cfg.From.Nanoseconds(), cfg.Salvage); err != nil {
			var ce *recordings.CorruptionError
			if errors.As(err, &ce) {
				return nil, ce // it names the file and the offset, as the replay's own read says it
			}
			return nil, fmt.Errorf("replay %s: %w", cfg.Path, err)
		}
	}
	fan := &fanout{sinks: append([]timeline.Sink{an}, sinks...)}
	var exp *otel.Exporter
	if cfg.Export != nil {
		ec := *cfg.Export
		// Read the meta first: the recording's epoch places its spans in time.
		ec.Epoch, ec.Scenario, ec.Meta = time.Unix(0, r.Meta().EpochUnixNs), r.Meta().Scenario, r.Meta()
		if exp, err = otel.New(ctx, ec, r.Strings()); err != nil {
			return nil, fmt.Errorf("--otlp: %w", err)
		}
		fan.sinks = append(fan.sinks, exp)
	}
	r.NameHostsTo(fan) // the hosts' names the ranks gave after the recording's Meta was written
	speed := func() float64 { return cfg.Speed }
	if _, err := play(ctx, r, cfg.From.Nanoseconds(), speed, fan.Emit, playOpts{}); err != nil {
		var ce *recordings.CorruptionError
		if errors.As(err, &ce) {
			return nil, err // it names the file and the offset already
		}
		return nil, fmt.Errorf("replay %s: %w", cfg.Path, err)
	}
	if f := r.InFlight(); f != nil {
		// The run stopped early: its diagnosis was given what was in flight then, ops that never
		// ended; this one is given the same, and so names the same root.
		an.Pending(f.Now, f.Events)
	}
	out := &Replayed{Meta: r.Meta(), Outcome: map[string]string{}, Dropped: r.Dropped(), Warnings: r.Warnings(),
		Strings: r.Strings(), EndedByAlert: r.InFlight() != nil, analyzer: an}
	if exp != nil {
		_ = exp.Close(context.Background()) // bounded by the export's shutdown budget
		s := exp.Stats()
		out.Export = &s
	}
	for _, kv := range r.Outcome() {
		out.Outcome[kv[0]] = kv[1]
	}
	if an.Events() == 0 && cfg.From == 0 {
		return out, fmt.Errorf("%s: %w", cfg.Path, ErrNoEvents)
	}
	return out, nil
}

// diagnoseRecordingBefore opens the recording at path again and gives an's diagnosis every event
// that ends before from (diagnoseBefore).
func diagnoseRecordingBefore(ctx context.Context, an *analysis.Analyzer, path string, from int64, salvage bool) error {
	r, err := recordings.Open(path, recordings.Options{Salvage: salvage})
	if err != nil {
		return err
	}
	defer r.Close()
	return diagnoseBefore(ctx, an, r, from, salvage, nil)
}

// Report is the replayed recording's report: the same as the run that made it.
func (r *Replayed) Report() *report.Report {
	return report.Build(r.analyzer.Result(r.Strings), r.Meta, report.Run{Ended: r.Outcome["ended"], DroppedEvents: r.Dropped,
		Export: ReportExport(r.Export)})
}

// backendName is the backend's name, known before the backend is built (the recording starts first).
func (p *Prepared) backendName() string {
	if p.cfg.Backend == "" {
		return "sim"
	}
	return p.cfg.Backend
}
