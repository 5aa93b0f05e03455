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
	if _, err := play(ctx, r, cfg.From.Nanoseconds(), speed, fan.Emit, playOpts{}); err != nil {
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

// playOpts is what a console's replay adds to the headless one.
type playOpts struct {
	// seek: a time received stops the replay, which returns it as next.
	seek <-chan int64
	// paced wakes a replay that sleeps when the speed changes, so that the position where the
	// change came is kept.
	paced <-chan struct{}
	// follow, when set, waits at the end of what the reader holds of a recording still being
	// written and reports whether the reader grew; when not, it returns the time of a seek received
	// meanwhile, or -1 at the recording's end or when ctx is done.
	follow func(ctx context.Context, seek <-chan int64) (next int64, grew bool)
	// running, when set, is told the ops under way at the position as the replay goes (see ahead),
	// and cleared when play returns.
	running *runningSet
	clock   Clock // nil: the wall clock
}

// Pacing of a replay: it sleeps at least minSleep (so that ops close together are emitted
// together, never before the position reaches their ends) and at most sleepSlice at a time (so it
// notices a new speed and a seek), and publishes the ops under way for horizonWall of wall time ahead (twice the slice, so
// the console's position moves on smoothly until the replay publishes again).
const (
	minSleep    = time.Millisecond
	sleepSlice  = 50 * time.Millisecond
	horizonWall = 2 * sleepSlice
)

// play emits a recording's events that end at or after from, in the order the recording holds them,
// each once the position reaches its end. The position moves at speed() simulated seconds per wall
// second (re-read as it changes, from where the position is; 0 as fast as possible: the position is
// then the latest end emitted). next is the time of a seek received (o.seek), or -1 when the
// recording ends or ctx is done. It is the one replay loop: the headless replay and the console's
// replay use it.
func play(ctx context.Context, r *recordings.Reader, from int64, speed func() float64, emit func(*timeline.Event), o playOpts) (next int64, err error) {
	clk := o.clock
	if clk == nil {
		clk = wallClock{}
	}
	if from > 0 {
		r.SeekTime(from)
	}
	var look *ahead
	if o.running != nil {
		look = newAhead(r, o.running)
		defer o.running.clear()
	}
	wall0, sim0 := clk.Now(), from
	last := from // the latest end emitted
	sp := speed()
	position := func(t time.Time) int64 {
		if sp <= 0 {
			return last
		}
		return sim0 + int64(float64(t.Sub(wall0))*sp)
	}
	publish := func(rest []timeline.Event, t time.Time) {
		p := position(t)
		look.publish(rest, p, p+int64(float64(horizonWall)*max(sp, 0)), t, sp)
	}
	for {
		if !r.Next() {
			if o.follow == nil || r.Err() != nil {
				break
			}
			if look != nil {
				publish(nil, clk.Now()) // what runs while the replay waits for more to be written
			}
			next, grew := o.follow(ctx, o.seek)
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
		if look != nil {
			look.playing(r.ChunkOffset())
		}
		for i := range evs {
			e := &evs[i]
			if e.End < from {
				continue
			}
			for {
				if now := speed(); now != sp {
					// The pace changed: the position stays where it is and moves on at the new pace.
					t := clk.Now()
					sim0 = min(position(t), max(e.End, last))
					wall0, sp = t, now
					if look != nil {
						publish(evs[i:], t)
					}
				}
				if sp <= 0 {
					if look != nil && o.running.wanted() {
						publish(evs[i:], time.Time{})
					}
					break
				}
				t := clk.Now()
				d := wall0.Add(time.Duration(float64(e.End-sim0) / sp)).Sub(t)
				if d <= 0 {
					break
				}
				if look != nil && look.stale(position(t)) {
					publish(evs[i:], t)
				}
				// At least minSleep: ops due meanwhile are emitted together when it ends.
				wake, stop := clk.Timer(min(max(d, minSleep), sleepSlice))
				select {
				case <-ctx.Done():
					stop()
					return -1, ctx.Err()
				case t := <-o.seek:
					stop()
					return t, nil
				case <-o.paced:
					stop()
				case <-wake:
				}
			}
			emit(e)
			last = max(last, e.End)
		}
		select {
		case <-ctx.Done():
			return -1, ctx.Err()
		case t := <-o.seek:
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
