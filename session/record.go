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
	rec, err := recordings.NewRecorder(w, p.strs, p.Meta(), recordings.FlushEvery(p.cfg.RecordFlushEvery))
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
}

// Replayed is a recording read back and analysed.
type Replayed struct {
	Export   *otel.Stats
	Meta     timeline.Meta
	Outcome  map[string]string
	Dropped  int64
	Warnings []string
	Strings  *timeline.Strings
	analyzer *analysis.Analyzer
}

// Replay reads a recording back, analysing its events and emitting them to the extra sinks too,
// paced to the wall clock at cfg.Speed and starting at cfg.From. It is the same event stream the
// live run produced. A recording without events is ErrNoEvents.
func Replay(ctx context.Context, cfg ReplayConfig, sinks ...timeline.Sink) (*Replayed, error) {
	r, err := recordings.Open(cfg.Path, recordings.Options{Salvage: cfg.Salvage})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	an := analysis.New(r.Meta())
	an.StartAt(cfg.From.Nanoseconds())
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
	speed := func() float64 { return cfg.Speed }
	if _, err := play(ctx, r, cfg.From.Nanoseconds(), speed, nil, fan.Emit, nil); err != nil {
		var ce *recordings.CorruptionError
		if errors.As(err, &ce) {
			return nil, err // it names the file and the offset already
		}
		return nil, fmt.Errorf("replay %s: %w", cfg.Path, err)
	}
	out := &Replayed{Meta: r.Meta(), Outcome: map[string]string{}, Dropped: r.Dropped(), Warnings: r.Warnings(),
		Strings: r.Strings(), analyzer: an}
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

// Report is the replayed recording's report: the same as the run that made it.
func (r *Replayed) Report() *report.Report {
	return report.Build(r.analyzer.Result(r.Strings), r.Meta, report.Run{Ended: r.Outcome["ended"], DroppedEvents: r.Dropped,
		Export: reportExport(r.Export)})
}

// play emits a recording's events that end at or after from, pacing each to the wall clock at
// speed() simulated seconds per wall second (re-read as it changes; 0 as fast as possible). A time
// received on seek stops it and is returned as next; otherwise next is -1 when the recording ends or
// ctx is done. It is the one replay loop: the headless replay and the console's replay use it.
//
// A recording still being written is followed: at the end of what the reader holds, follow (when
// set) waits for more and reports whether the reader grew; when not, it returns the time of a seek
// received meanwhile, or -1 at the recording's end or when ctx is done.
func play(ctx context.Context, r *recordings.Reader, from int64, speed func() float64, seek <-chan int64, emit func(*timeline.Event),
	follow func(ctx context.Context, seek <-chan int64) (next int64, grew bool)) (next int64, err error) {
	if from > 0 {
		r.SeekTime(from)
	}
	wall0, sim0 := time.Now(), from
	sp := speed()
	for {
		if !r.Next() {
			if follow == nil || r.Err() != nil {
				break
			}
			next, grew := follow(ctx, seek)
			if grew {
				continue
			}
			if ctx.Err() != nil {
				return -1, ctx.Err()
			}
			if next >= 0 {
				return next, nil
			}
			break
		}
		evs := r.At()
		for i := range evs {
			e := &evs[i]
			if e.End < from {
				continue
			}
			for {
				if now := speed(); now != sp {
					// The pace changed: keep the present where it is.
					wall0, sim0, sp = time.Now(), e.End, now
				}
				if sp <= 0 {
					break
				}
				d := time.Until(wall0.Add(time.Duration(float64(e.End-sim0) / sp)))
				if d <= time.Millisecond {
					break
				}
				select {
				case <-ctx.Done():
					return -1, ctx.Err()
				case t := <-seek:
					return t, nil
				case <-time.After(min(d, 50*time.Millisecond)):
				}
			}
			emit(e)
		}
		select {
		case <-ctx.Done():
			return -1, ctx.Err()
		case t := <-seek:
			return t, nil
		default:
		}
	}
	if err := r.Err(); err != nil {
		return -1, err
	}
	return -1, nil
}

// backendName is the backend's name, known before the backend is built (the recording starts first).
func (p *Prepared) backendName() string {
	if p.cfg.Backend == "" {
		return "sim"
	}
	return p.cfg.Backend
}
