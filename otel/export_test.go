package otel_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xfertop/xfertop/otel"
	"github.com/xfertop/xfertop/session"
)

func TestMain(m *testing.M) {
	otel.QuietErrors()
	goleak.VerifyTestMain(m)
}

func exportRun(t testing.TB, scenario string, steps int, speed float64, cfg *otel.Config, sets ...string) (*session.Prepared, session.Outcome) {
	t.Helper()
	knobs := map[string]string{}
	for _, kv := range sets {
		k, v, _ := strings.Cut(kv, "=")
		knobs[k] = v
	}
	return exportRunConfig(t, session.Config{Scenario: scenario, Steps: steps, Speed: speed, Export: cfg, Sets: knobs})
}

// exportRunConfig is exportRun of any session configuration (faults, a topology).
func exportRunConfig(t testing.TB, c session.Config) (*session.Prepared, session.Outcome) {
	t.Helper()
	p, err := session.Prepare(c)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return p, out
}

func configFor(t testing.TB, endpoint, protocol string) *otel.Config {
	t.Helper()
	cfg, ok, err := otel.Resolve(endpoint, func(k string) string {
		if k == "OTEL_EXPORTER_OTLP_PROTOCOL" {
			return protocol
		}
		return ""
	})
	if err != nil || !ok {
		t.Fatal(err)
	}
	return &cfg
}

// Over gRPC and over HTTP/protobuf, every span built reaches the collector: one trace per step,
// hosts as separate resources, send/recv links, nothing dropped.
func TestExportReachesCollector(t *testing.T) {
	for _, proto := range []string{"grpc", "http/protobuf"} {
		t.Run(proto, func(t *testing.T) {
			r := newReceiver()
			if proto == "grpc" {
				r.startGRPC(t, "127.0.0.1:0")
			} else {
				r.startHTTP(t)
			}
			defer r.stop()
			p, _ := exportRun(t, "crosshost", 3, 0, configFor(t, r.addr, proto))
			st := p.ExportStats()
			if st.SpansBuilt == 0 || st.SpansExported != st.SpansBuilt || st.SpansDropped != 0 || st.EventsDropped != 0 || st.State != "ok" {
				t.Fatalf("stats %+v", st)
			}
			if got := r.count(); int64(got) != st.SpansExported {
				t.Errorf("collector received %d spans; the run says it exported %d", got, st.SpansExported)
			}
			if len(r.traces) != 3 {
				t.Errorf("%d traces; want one per step (3)", len(r.traces))
			}
			if len(r.hosts) != 2 || r.hosts["host-0"] == 0 || r.hosts["host-1"] == 0 {
				t.Errorf("resources by host.name %v; want host-0 and host-1", r.hosts)
			}
			if r.links == 0 {
				t.Error("no send/recv links")
			}
		})
	}
}

// The deadlock's timed-out send arrives with error status.
func TestExportErrorStatus(t *testing.T) {
	r := newReceiver()
	r.startGRPC(t, "127.0.0.1:0")
	defer r.stop()
	exportRun(t, "deadlock", 3, 0, configFor(t, r.addr, "grpc"))
	if r.errors < 2 {
		t.Errorf("%d spans with error status; want the failed send and its step", r.errors)
	}
}

// With the collector gone the run is not slowed or stopped: it finishes, the spans that could not be
// exported are counted as dropped, and everything else (the events, the report) is complete.
func TestCollectorDown(t *testing.T) {
	r := newReceiver()
	r.startGRPC(t, "127.0.0.1:0")
	cfg := configFor(t, r.addr, "grpc")
	cfg.RetryFor, cfg.ExportTimeout = 500*time.Millisecond, 300*time.Millisecond
	p, err := session.Prepare(session.Config{Scenario: "pipeline", Steps: 8, Speed: 4, Export: cfg})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(150 * time.Millisecond) // first steps' spans go through; then the collector dies
		r.stop()
	}()
	begin := time.Now()
	out, err := p.Run(context.Background())
	if err != nil || out.Steps != 8 {
		t.Fatalf("run: %d steps, %v", out.Steps, err)
	}
	st := p.ExportStats()
	t.Logf("ran in %v; stats %+v", time.Since(begin), st)
	if st.SpansDropped+st.EventsDropped == 0 {
		t.Errorf("collector down, yet nothing counted as dropped: %+v", st)
	}
	if st.SpansExported+st.SpansDropped != st.SpansBuilt {
		t.Errorf("built %d ≠ exported %d + dropped %d", st.SpansBuilt, st.SpansExported, st.SpansDropped)
	}
	base, baseOut := exportRun(t, "pipeline", 8, 0, nil)
	if n, want := p.Report(out).Events, base.Report(baseOut).Events; n != want {
		t.Errorf("%d events with a dead collector, %d without export: events were lost", n, want)
	}
}

// Export resumes by itself when the collector comes back.
func TestCollectorComesBack(t *testing.T) {
	r := newReceiver()
	r.startGRPC(t, "127.0.0.1:0")
	addr := r.addr
	cfg := configFor(t, addr, "grpc")
	cfg.RetryFor, cfg.ExportTimeout = 0, 300*time.Millisecond
	back := newReceiver()
	go func() {
		// The outage begins once the first spans have arrived (however loaded the machine is).
		for deadline := time.Now().Add(10 * time.Second); r.count() == 0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		r.stop()
		time.Sleep(1000 * time.Millisecond)
		back.startGRPC(t, addr) // the same address, as a restarted collector
	}()
	// 24 steps at twice real speed: ~3.8 s, the outage in the middle.
	p, _ := exportRun(t, "pipeline", 24, 2, cfg)
	defer back.stop()
	st := p.ExportStats()
	t.Logf("before the outage %d spans, after %d; stats %+v", r.count(), back.count(), st)
	if r.count() == 0 || back.count() == 0 {
		t.Errorf("export did not resume: %d spans before the outage, %d after", r.count(), back.count())
	}
	// An export whose answer came too late is counted dropped though the collector may have taken
	// it (OTLP delivers at least once): the collectors hold at least what the run says it exported,
	// and every span built is counted exactly once.
	if got := int64(r.count() + back.count()); got < st.SpansExported {
		t.Errorf("collectors got %d spans; the run says it exported %d", got, st.SpansExported)
	}
	if st.SpansExported+st.SpansDropped != st.SpansBuilt {
		t.Errorf("built %d ≠ exported %d + dropped %d", st.SpansBuilt, st.SpansExported, st.SpansDropped)
	}
}

// A replay exports the same spans as the run that made the recording, at the recording's own time.
func TestReplayExport(t *testing.T) {
	path := t.TempDir() + "/r.xfr"
	epoch := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	live := newReceiver()
	live.startGRPC(t, "127.0.0.1:0")
	defer live.stop()
	p, err := session.Prepare(session.Config{Scenario: "crosshost", Steps: 2, Record: path, Epoch: epoch, Export: configFor(t, live.addr, "grpc")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := newReceiver()
	r.startGRPC(t, "127.0.0.1:0")
	defer r.stop()
	rp, err := session.Replay(context.Background(), session.ReplayConfig{Path: path, Export: configFor(t, r.addr, "grpc")})
	if err != nil {
		t.Fatal(err)
	}
	if rp.Export == nil || rp.Export.SpansExported == 0 || rp.Export.SpansExported != p.ExportStats().SpansExported {
		t.Fatalf("replay exported %+v; the run exported %+v", rp.Export, p.ExportStats())
	}
	if r.count() != live.count() || len(r.traces) != len(live.traces) {
		t.Errorf("replay sent %d spans in %d traces; the run %d in %d", r.count(), len(r.traces), live.count(), len(live.traces))
	}
	if r.first.Before(epoch) || r.first.After(epoch.Add(time.Minute)) {
		t.Errorf("replayed spans start at %v; the recording's epoch is %v", r.first, epoch)
	}
}
