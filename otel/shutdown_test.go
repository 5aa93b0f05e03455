package otel_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xfertop/xfertop/otel"
	"github.com/xfertop/xfertop/session"
)

// badCollector is a TCP port that misbehaves the way dead or hung collectors do.
type badCollector struct {
	addr  string
	lis   net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

// startBad opens a port that is silent (accepts connections and never answers), resetting (accepts,
// then resets each connection) or refusing (nothing listens: connections are refused).
func startBad(t *testing.T, how string) *badCollector {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &badCollector{addr: lis.Addr().String(), lis: lis}
	if how == "refusing" {
		lis.Close() // the port was free a moment ago and nothing listens on it now
		return b
	}
	b.wg.Go(func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			if how == "resetting" {
				_ = c.(*net.TCPConn).SetLinger(0) // close sends RST
				c.Close()
				continue
			}
			b.mu.Lock()
			b.conns = append(b.conns, c)
			b.mu.Unlock()
		}
	})
	t.Cleanup(func() {
		lis.Close()
		b.wg.Wait()
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, c := range b.conns {
			c.Close()
		}
	})
	return b
}

// With a collector that never answers, resets connections or refuses them, every span built is
// counted exported or dropped, and the end of the run waits no longer than the shutdown budget: a
// refusing port is given up at once even with a long budget. Bounds on time are loose (seconds) so
// that a loaded machine does not fail them; the reason the export gives for stopping is exact. Twenty
// steps make more spans than one export request takes, so some are still queued at shutdown.
func TestShutdownAccountsForEverySpan(t *testing.T) {
	const budget = 500 * time.Millisecond
	for _, proto := range []string{"grpc", "http/protobuf"} {
		for _, tc := range []struct {
			how    string
			budget time.Duration
			why    string // what the export's state must say
		}{
			{"silent", budget, "shutdown budget (500ms"},
			{"resetting", budget, ""}, // gRPC retries a reset until the budget ends; HTTP fails each batch at once
			{"refusing", time.Minute, "the collector refuses connections"},
		} {
			t.Run(proto+"/"+tc.how, func(t *testing.T) {
				bad := startBad(t, tc.how)
				cfg := configFor(t, bad.addr, proto)
				cfg.ShutdownTimeout = tc.budget
				p, err := session.Prepare(session.Config{Scenario: "pipeline", Steps: 20, Export: cfg})
				if err != nil {
					t.Fatal(err)
				}
				begin := time.Now()
				out, err := p.Run(context.Background())
				if err != nil || out.Steps != 20 {
					t.Fatalf("run: %d steps, %v", out.Steps, err)
				}
				shutdown := time.Since(begin) - out.Wall
				st := p.ExportStats()
				t.Logf("shutdown took %v; %+v", shutdown, st)
				if st.SpansBuilt == 0 || st.SpansExported != 0 || st.SpansExported+st.SpansDropped != st.SpansBuilt {
					t.Errorf("built %d, exported %d, dropped %d; want none exported and built = exported + dropped",
						st.SpansBuilt, st.SpansExported, st.SpansDropped)
				}
				if st.MetricPointsExported != 0 || st.MetricPointsExported+st.MetricPointsDropped != st.MetricPoints {
					t.Errorf("metric points: %d built, %d exported, %d dropped; want none exported and built = exported + dropped",
						st.MetricPoints, st.MetricPointsExported, st.MetricPointsDropped)
				}
				if !strings.HasPrefix(st.State, "failing: ") || !strings.Contains(st.State, tc.why) {
					t.Errorf("state %q; want failing, saying %q", st.State, tc.why)
				}
				// The state's count is the report's: it once said "5122 spans queued" of 171,654 dropped.
				if tc.how == "silent" && !strings.Contains(st.State, fmt.Sprintf("(%d spans dropped:", st.SpansDropped)) {
					t.Errorf("state %q; want it to count the %d spans dropped", st.State, st.SpansDropped)
				}
				if limit := min(tc.budget, 2*time.Second) + 5*time.Second; shutdown > limit {
					t.Errorf("the end of the run waited %v for the collector; budget %v", shutdown, tc.budget)
				}
			})
		}
	}
}

// With --otlp-detail full the run waits for a slow collector rather than drop a span: the budget
// bounds a stall, not the export. The collector takes each request of up to 1,024 spans 300 ms
// after it came, so the six or more requests of a full-detail run take longer than the budget of
// 1.2 s (a budget on the whole wait dropped a third of them or more) while the collector never
// stalls for that long: 900 ms to spare for a machine loaded under -race (250 ms was not).
func TestFullDetailWaitsForSlowCollector(t *testing.T) {
	r := newReceiver()
	r.delay = 300 * time.Millisecond
	r.startGRPC(t, "127.0.0.1:0")
	defer r.stop()
	cfg := configFor(t, r.addr, "grpc")
	cfg.Detail, cfg.ShutdownTimeout = otel.DetailFull, 1200*time.Millisecond
	p, out := exportRun(t, "pipeline", 16, 0, cfg)
	st := p.ExportStats()
	if out.Steps != 16 || st.SpansBuilt < 5*1024 {
		t.Fatalf("%d steps, %d spans built; want 16 steps and more spans than 5 requests take (to outlast the budget)", out.Steps, st.SpansBuilt)
	}
	if st.SpansDropped != 0 || st.SpansExported != st.SpansBuilt || r.count() != int(st.SpansBuilt) || st.Failing {
		t.Errorf("built %d, exported %d, dropped %d, received %d, state %q; want every span exported and received",
			st.SpansBuilt, st.SpansExported, st.SpansDropped, r.count(), st.State)
	}
}

// A collector away for longer than one export attempt (ExportTimeout) but less than the retries'
// budget (RetryFor) loses nothing: the retries are bounded by RetryFor, each attempt by
// ExportTimeout. Over gRPC the SDK's own timeout bounds the whole export with its retries, so an
// outage past ExportTimeout (3 s by default, against 10 s of retries) dropped the batch under way.
func TestOutageWithinRetriesLosesNothing(t *testing.T) {
	for _, proto := range []string{"grpc", "http/protobuf"} {
		t.Run(proto, func(t *testing.T) {
			r := newReceiver()
			r.outage = 1500 * time.Millisecond
			if proto == "grpc" {
				r.startGRPC(t, "127.0.0.1:0")
			} else {
				r.startHTTP(t)
			}
			defer r.stop()
			cfg := configFor(t, r.addr, proto)
			cfg.ExportTimeout, cfg.RetryFor, cfg.ShutdownTimeout = 400*time.Millisecond, 20*time.Second, 30*time.Second
			cfg.NoMetrics = true
			p, _ := exportRun(t, "pipeline", 4, 0, cfg)
			st := p.ExportStats()
			if st.SpansBuilt == 0 || st.SpansDropped != 0 || st.SpansExported != st.SpansBuilt || r.count() != int(st.SpansBuilt) {
				t.Errorf("built %d, exported %d, dropped %d (%q), received %d; want every span through the outage",
					st.SpansBuilt, st.SpansExported, st.SpansDropped, st.DropReason, r.count())
			}
		})
	}
}
