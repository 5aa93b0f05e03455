package otel_test

import (
	"context"
	"testing"
	"time"

	"github.com/xfertop/xfertop/otel"
	"github.com/xfertop/xfertop/session"
	"github.com/xfertop/xfertop/timeline"
)

// BenchmarkExportOverhead runs the same simulation with export off and on (to a local OTLP
// HTTP/protobuf receiver that discards what it gets) and reports the simulator's events/s for each and their ratio (goal ≥ 0.9).
//
//	go test ./otel -run '^$' -bench ExportOverhead -benchtime 5x
func BenchmarkExportOverhead(b *testing.B) {
	r := newReceiver()
	r.startSink(b)
	defer r.stop()
	cfg := configFor(b, r.addr, "http/protobuf") // the defaults, span budget included
	unlimited := *cfg
	unlimited.MaxRate = 0
	spansOnly := *cfg // OTEL_METRICS_EXPORTER=none: what the metrics cost is on/off against this
	spansOnly.NoMetrics = true
	var built, exported, overRate, dropped int64
	run := func(export *otel.Config) (events int, d time.Duration) {
		c := session.Config{Scenario: "overlap", Steps: 200, Window: 1 << 20, Export: export}
		st := &counter{}
		p, err := session.Prepare(c, st)
		if err != nil {
			b.Fatal(err)
		}
		// Outcome.Wall is the simulation itself (what export must not slow down); the final flush to
		// the collector comes after it.
		out, err := p.Run(context.Background())
		if err != nil || out.Ended != nil {
			b.Fatal(err, out.Ended)
		}
		if st := p.ExportStats(); st != nil && export == cfg {
			built, exported, overRate, dropped = built+st.SpansBuilt, exported+st.SpansExported, overRate+st.StepsOverRate, dropped+st.EventsDropped
		}
		return st.n, out.Wall
	}
	var offEv, onEv, allEv, spEv int
	var offT, onT, allT, spT time.Duration
	for b.Loop() {
		e, d := run(nil)
		offEv, offT = offEv+e, offT+d
		e, d = run(cfg)
		onEv, onT = onEv+e, onT+d
		e, d = run(&unlimited)
		allEv, allT = allEv+e, allT+d
		e, d = run(&spansOnly)
		spEv, spT = spEv+e, spT+d
	}
	off := float64(offEv) / offT.Seconds()
	on := float64(onEv) / onT.Seconds()
	all := float64(allEv) / allT.Seconds()
	b.ReportMetric(off, "events/s-off")
	b.ReportMetric(on, "events/s-on")
	b.ReportMetric(on/off, "on/off")
	b.ReportMetric(all/off, "unlimited/off")
	b.ReportMetric(float64(spEv)/spT.Seconds()/off, "spans-only/off")
	b.ReportMetric(float64(exported)/onT.Seconds(), "spans/s-exported")
	b.ReportMetric(float64(overRate)/float64(b.N), "steps-over-budget/run")
	b.ReportMetric(float64(dropped)/float64(b.N), "events-dropped/run")
}

// counter counts the events a run emits.
type counter struct{ n int }

func (c *counter) Emit(*timeline.Event) { c.n++ }
