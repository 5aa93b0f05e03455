package session

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/xfertop/xfertop/otel"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/timeline"
)

// Writer identifies the xfertop that wrote a recording.
const Writer = "xfertop 0.1"

// RecordingMeta describes a prepared run for its recording. epoch is the wall-clock time of
// simulated time 0.
func (p *Prepared) RecordingMeta(epoch time.Time) recordings.Meta {
	return recordings.Meta{Source: p.backendName(), Scenario: p.Scenario.File.Name, Backend: p.backendName(), Topology: p.Topology.Name,
		Devices: p.Topology.Devices(), Seed: p.Config.Seed, IdleMode: timeline.IdleEngine, EpochUnixNs: epoch.UnixNano(),
		Writer: Writer, Knobs: p.Scenario.Knobs}
}

// startRecording creates the recording and adds the recorder to the sinks.
func (p *Prepared) startRecording() error {
	w, err := recordings.Create(p.Config.Record)
	if err != nil {
		return err
	}
	rec, err := recordings.NewRecorder(w, p.Store.Strings, p.RecordingMeta(p.Config.Epoch))
	if err != nil {
		return err
	}
	p.fan.sinks = append(p.fan.sinks, rec)
	p.recorder = rec
	return nil
}

func (p *Prepared) stopRecording(o Outcome, runErr error) error {
	ended := ""
	switch {
	case o.Ended != nil:
		ended = o.Ended.Error()
	case runErr != nil:
		ended = runErr.Error()
	}
	if err := p.recorder.Close([][2]string{{"ended", ended}, {"steps", strconv.Itoa(o.Steps)}}); err != nil {
		return fmt.Errorf("recording %s: %w", p.Config.Record, err)
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
}

// Replayed is a recording read back into a store.
type Replayed struct {
	Export   *otel.Stats
	Store    *timeline.Store
	Meta     recordings.Meta
	Outcome  map[string]string
	Dropped  int64
	Warnings []string
}

// Replay reads a recording into a store, emitting its events to the extra sinks too, paced to the
// wall clock at cfg.Speed and starting at cfg.From. It is the same event stream the live run produced.
func Replay(ctx context.Context, cfg ReplayConfig, sinks ...timeline.Sink) (*Replayed, error) {
	r, f, err := recordings.Open(cfg.Path, recordings.Options{Salvage: cfg.Salvage})
	if err != nil {
		return nil, err
	}
	defer f.Close()
	from := cfg.From.Nanoseconds()
	if from > 0 {
		r.SeekTime(from)
	}
	store := timeline.NewStore(r.Strings())
	fan := &fanout{sinks: append([]timeline.Sink{store}, sinks...)}
	var exp *otel.Exporter
	if cfg.Export != nil {
		ec := *cfg.Export
		// Read the meta first: the recording's epoch places its spans in time.
		ec.Epoch, ec.Scenario = time.Unix(0, r.Meta().EpochUnixNs), r.Meta().Scenario
		if exp, err = otel.New(ctx, ec, r.Strings()); err != nil {
			return nil, fmt.Errorf("--otlp: %w", err)
		}
		fan.sinks = append(fan.sinks, exp)
	}
	wall0 := time.Now()
	for r.Next() {
		for i, e := range r.At() {
			if e.End < from {
				continue
			}
			if cfg.Speed > 0 {
				target := wall0.Add(time.Duration(float64(e.End-from) / cfg.Speed))
				if d := time.Until(target); d > time.Millisecond {
					select {
					case <-ctx.Done():
						return nil, fmt.Errorf("replay %s: %w", cfg.Path, ctx.Err())
					case <-time.After(d):
					}
				}
			}
			fan.Emit(&r.At()[i])
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("replay %s: %w", cfg.Path, err)
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	out := &Replayed{Store: store, Meta: r.Meta(), Outcome: map[string]string{}, Dropped: r.Dropped(), Warnings: r.Warnings()}
	if exp != nil {
		fctx, cancel := context.WithTimeout(context.Background(), ExportFlushTimeout)
		_ = exp.Close(fctx)
		cancel()
		s := exp.Stats()
		out.Export = &s
	}
	for _, kv := range r.Outcome() {
		out.Outcome[kv[0]] = kv[1]
	}
	return out, nil
}

// ReportMeta is the report description of a replayed recording: the same as the run that made it.
func (r *Replayed) ReportMeta() report.Meta {
	m := r.Meta
	return report.Meta{Source: m.Source, Scenario: m.Scenario, Knobs: m.Knobs, Backend: m.Backend, Topology: m.Topology,
		Devices: m.Devices, Seed: m.Seed, DroppedEvents: r.Dropped, IdleMode: m.IdleMode, KernelWaitNs: m.KernelWaitNs,
		Ended: r.Outcome["ended"], Export: reportExport(r.Export)}
}

// backendName is the backend's name, known before the backend is built (the recording starts first).
func (p *Prepared) backendName() string {
	if p.Config.Backend == "" {
		return "sim"
	}
	return p.Config.Backend
}
