package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xfertop/xfertop/receiver"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui"
)

// senderEnv, set, makes the test binary a sender process of BenchmarkListenCollector4096GPUs
// rather than run tests: its value is the sender's scale (scale.String) and its host.
const senderEnv = "XFERTOP_BENCH_SENDER"

// scale is the load of BenchmarkListenCollector4096GPUs: senders processes, one a host of gpus
// GPUs, each sending requests requests of spans spans, one every every.
type scale struct {
	senders, gpus, requests, spans int
	every                          time.Duration
}

// defaultScale is a 4,096-GPU job (64 hosts × 64 GPUs) whose hosts each send 640 spans a second:
// 41,000 spans/s through the Collector for 5 s. XFERTOP_BENCH_SCALE overrides it, as
// "senders=64,gpus=64,requests=50,spans=64,every=100ms".
var defaultScale = scale{senders: 64, gpus: 64, requests: 50, spans: 64, every: 100 * time.Millisecond}

func (s scale) String() string {
	return fmt.Sprintf("senders=%d,gpus=%d,requests=%d,spans=%d,every=%s", s.senders, s.gpus, s.requests, s.spans, s.every)
}

// parseScale reads scale.String's form over the defaults.
func parseScale(text string) (scale, error) {
	s := defaultScale
	for kv := range strings.SplitSeq(text, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return s, fmt.Errorf("%q: want key=value", kv)
		}
		var err error
		switch k {
		case "senders":
			s.senders, err = strconv.Atoi(v)
		case "gpus":
			s.gpus, err = strconv.Atoi(v)
		case "requests":
			s.requests, err = strconv.Atoi(v)
		case "spans":
			s.spans, err = strconv.Atoi(v)
		case "every":
			s.every, err = time.ParseDuration(v)
		default:
			return s, fmt.Errorf("%q: no such key (senders, gpus, requests, spans, every)", k)
		}
		if err != nil {
			return s, fmt.Errorf("%s: %w", k, err)
		}
	}
	if s.senders < 1 || s.gpus < 1 || s.requests < 1 || s.spans < 1 || s.every <= 0 {
		return s, fmt.Errorf("%s: every figure must be positive", text)
	}
	return s, nil
}

// senderMain is a sender process: host h of the scale in spec ("SCALE;host=H;addr=ADDR") sends its
// requests to addr as an OTLP exporter does (a retryable refusal is retried with backoff for up to
// 30 s, then the request is dropped and counted), and prints "sent N dropped M" (spans).
func senderMain(spec string) int {
	parts := strings.Split(spec, ";")
	if len(parts) != 3 || !strings.HasPrefix(parts[1], "host=") || !strings.HasPrefix(parts[2], "addr=") {
		fmt.Fprintf(os.Stderr, "%s=%q: want SCALE;host=H;addr=ADDR\n", senderEnv, spec)
		return 2
	}
	sc, err := parseScale(parts[0])
	h, err2 := strconv.Atoi(strings.TrimPrefix(parts[1], "host="))
	if err != nil || err2 != nil {
		fmt.Fprintf(os.Stderr, "%s=%q: %v %v\n", senderEnv, spec, err, err2)
		return 2
	}
	cc, err := grpc.NewClient(strings.TrimPrefix(parts[2], "addr="), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cc.Close()
	tick := time.NewTicker(sc.every)
	defer tick.Stop()
	var sent, dropped int
	for r := range sc.requests {
		req, err := proto.Marshal(hostRequest(h, r, sc.gpus, sc.senders, sc.spans))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		<-tick.C
		giveUp := time.Now().Add(30 * time.Second)
		for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
			var resp []byte
			err := cc.Invoke(context.Background(), "/opentelemetry.proto.collector.trace.v1.TraceService/Export", req, &resp, grpc.ForceCodec(bytesCodec{}))
			if err == nil {
				sent += sc.spans
				break
			}
			if c := status.Code(err); (c != codes.Unavailable && c != codes.ResourceExhausted) || time.Now().After(giveUp) {
				fmt.Fprintf(os.Stderr, "host %d request %d: %v\n", h, r, err)
				dropped += sc.spans
				break
			}
			time.Sleep(wait)
		}
	}
	fmt.Printf("sent %d dropped %d\n", sent, dropped)
	return 0
}

// BenchmarkListenCollector4096GPUs is `xfertop listen`'s console receiving a 4,096-GPU job as CI
// runs it: 64 sender processes (this test binary, one a host of 64 GPUs) export OTLP/gRPC to a real
// OpenTelemetry Collector (OTELCOL_BIN), which batches and forwards to the listener, while the
// console runs as in BenchmarkListen64Senders. Once the senders are done, the Collector is stopped
// as a restart stops it (it drains what it holds) and the listener closed. It reports the frames'
// wall and CPU times (p50, p99, max), the spans/s received, and the accounting: every span the
// senders numbered is received by listen or counted lost by it (gaps in a host's numbered stream),
// and what the senders gave up on is counted by them; the benchmark fails where that does not add
// up, never on a time.
//
//	OTELCOL_BIN=$(bash .ci/otelcol.sh) go test ./cmd/xfertop -run '^$' -bench ListenCollector4096 -benchtime 1x
//	XFERTOP_BENCH_SCALE=senders=16,spans=32 …   # a lighter load on a small machine
func BenchmarkListenCollector4096GPUs(b *testing.B) {
	collectorBin(b)
	sc := defaultScale
	if env := os.Getenv("XFERTOP_BENCH_SCALE"); env != "" {
		var err error
		if sc, err = parseScale(env); err != nil {
			b.Fatalf("XFERTOP_BENCH_SCALE: %v", err)
		}
	}
	for b.Loop() {
		o := &listenOpts{cfg: receiver.Config{GRPC: "127.0.0.1:0"}, console: consoleOpts{tick: 60 * time.Millisecond, window: timeline.DefaultWindow}}
		src, err := startListenSource(o, &lineLog{w: io.Discard})
		if err != nil {
			b.Fatal(err)
		}
		m := ui.New(src, ui.Options{Tick: o.console.tick, IsDark: true})
		next := m.Init()
		m.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
		c := startCollector(b, src.l.GRPCAddr().String())
		cpu0, start := processCPU(), time.Now()
		senders := startSenders(b, sc, c.grpc)
		fig := driveConsole(m, next, func() bool { return senders.running.Load() > 0 })
		elapsed := time.Since(start)
		sent, senderDropped := senders.wait(b)
		c.stop(b, syscall.SIGTERM) // it drains its batch and its exporter's queue into listen
		if err := src.l.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
		for range 2 { // pause and resume: the last events, folded now
			m.Update(tea.KeyPressMsg{Code: ' ', Text: " "})
		}
		cpu := processCPU() - cpu0
		tot := src.l.Totals()
		numbered := int64(sc.senders * sc.requests * sc.spans)
		b.Logf("%s: %d spans numbered, %d acknowledged by the Collector, %d given up by the senders; listen: %d received from %d hosts, %d counted lost, %d duplicates, %d refused (resent); %.0f spans/s",
			sc, numbered, sent, senderDropped, tot.Events, len(tot.Hosts), tot.Lost, tot.Duplicates, tot.Refused, float64(tot.Events)/elapsed.Seconds())
		if tot.Events+tot.Lost != numbered || sent+senderDropped != numbered || len(tot.Hosts) != sc.senders {
			b.Errorf("lost what it did not count: %d numbered, %d received + %d counted lost by listen (from %d hosts of %d); the senders: %d acknowledged + %d given up",
				numbered, tot.Events, tot.Lost, len(tot.Hosts), sc.senders, sent, senderDropped)
		}
		if d := src.Info().Meta.Devices; d != sc.senders*sc.gpus {
			b.Errorf("the console's job has %d devices; want %d", d, sc.senders*sc.gpus)
		}
		fig.report(b)
		b.ReportMetric(float64(tot.Events)/elapsed.Seconds(), "spans/s")
		reportListenCPU(b, tot.Events, cpu)
		b.ReportMetric(float64(sc.senders), "senders")
		b.ReportMetric(float64(sc.senders*sc.gpus), "gpus")
		b.ReportMetric(float64(tot.Events), "received")
		b.ReportMetric(float64(tot.Lost), "lost-counted")
		b.ReportMetric(float64(senderDropped), "sender-dropped")
	}
}

// The benchmark's scale reads over the defaults and says what is wrong with a bad one.
func TestParseScale(t *testing.T) {
	tests := []struct {
		in, err string
		want    scale
	}{
		{"senders=16,spans=32", "", scale{senders: 16, gpus: 64, requests: 50, spans: 32, every: 100 * time.Millisecond}},
		{defaultScale.String(), "", defaultScale},
		{"senders=16,every=1s", "", scale{senders: 16, gpus: 64, requests: 50, spans: 64, every: time.Second}},
		{"senders", `"senders": want key=value`, scale{}},
		{"hosts=4", `"hosts": no such key`, scale{}},
		{"gpus=x", "gpus: strconv.Atoi", scale{}},
		{"spans=0", "every figure must be positive", scale{}},
	}
	for _, tt := range tests {
		got, err := parseScale(tt.in)
		switch {
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("parseScale(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("parseScale(%q) error %v; want one saying %q", tt.in, err, tt.err)
		}
	}
}
