package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/xfertop/xfertop/receiver"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui"
)

// Run with: go test ./cmd/xfertop -run '^$' -bench Listen64 -benchtime 1x

// Load of BenchmarkListen64Senders: 64 hosts of 8 GPUs, each sending its own numbered stream, a
// request every 100 ms as an OTLP exporter's batches go: 64 × 80 × 512 = 2.6 M spans in 8 s
// (330 000 spans/s), well past the window's 1 M events.
const (
	benchSenders  = 64
	benchRequests = 80  // per sender
	benchSpans    = 512 // per request
	benchEvery    = 100 * time.Millisecond
	benchEpoch    = int64(1_700_000_000_000_000_000)
)

func kv(k string, v any) *commonpb.KeyValue {
	switch v := v.(type) {
	case string:
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	case int:
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: int64(v)}}}
	}
	panic(fmt.Sprintf("kv %T", v))
}

// hostRequest is request r of host h of a job of hosts hosts of gpus GPUs: n kernels, a GPU's
// each in turn on one of two streams, numbered in the host's session (request r holds its numbers
// r·n to r·n + n − 1).
func hostRequest(h, r, gpus, hosts, n int) *collectortrace.ExportTraceServiceRequest {
	res := &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
		kv("service.name", "xfertop"), kv("host.name", "host-"+strconv.Itoa(h)), kv("xfertop.host", h),
		kv("xfertop.session", fmt.Sprintf("bench-%d", h)), kv("xfertop.detail", "full"),
		kv("xfertop.meta.epoch_unix_ns", strconv.FormatInt(benchEpoch, 10)), kv("xfertop.meta.gpus_per_host", strconv.Itoa(gpus)),
		kv("xfertop.meta.devices", strconv.Itoa(gpus*hosts)), kv("xfertop.meta.scenario", "load"),
	}}
	spans := make([]*tracepb.Span, n)
	for i := range spans {
		seq := r*n + i
		dev, stream := h*gpus+i%gpus, 1+(i/gpus)%2
		start := benchEpoch + int64(seq/16)*10_000
		spans[i] = &tracepb.Span{Name: "kernel", StartTimeUnixNano: uint64(start), EndTimeUnixNano: uint64(start + 9_000),
			Attributes: []*commonpb.KeyValue{kv("xfertop.kind", "kernel"), kv("xfertop.device", dev), kv("xfertop.stream", stream),
				kv("xfertop.seq", seq), kv("xfertop.label", "gemm")}}
	}
	return &collectortrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{Resource: res, ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}}}}
}

// bytesCodec sends requests already encoded.
type bytesCodec struct{}

func (bytesCodec) Marshal(v any) ([]byte, error) { return v.([]byte), nil }
func (bytesCodec) Unmarshal([]byte, any) error   { return nil } // the response is empty
func (bytesCodec) Name() string                  { return "proto" }

// rssBytes is the process's resident set (Linux), 0 where it cannot be read.
func rssBytes() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb * 1024
		}
	}
	return 0
}

// benchScale is BenchmarkListen64Senders' load: 64 hosts of 8 GPUs, each sending its own numbered
// stream, a request every 100 ms as an OTLP exporter's batches go: 64 × 80 × 512 = 2.6 M spans in
// 8 s (330 000 spans/s), well past the window's 1 M events.
var benchScale = scale{senders: 64, gpus: 8, requests: 80, spans: 512, every: 100 * time.Millisecond}

// BenchmarkListen64Senders is `xfertop listen`'s console under load: 64 sender processes (this test
// binary, each a host sending its own numbered stream, encoding each request as it goes: holding
// them all would put the senders' gigabyte in the figures of the console's memory) push their
// streams (2.6 M spans over 8 s) at once on loopback while the console runs as on screen: a tick
// every 60 ms starts a fold of what arrived (on its own goroutine), and every message the model
// handles (a tick, a fold's frame) is a frame of the overview. It reports the frame time (Update and
// View together) at p50, p99 and max, the frame's own CPU time (without the waits for a core the
// receiver's goroutines cause) and View's alone, the fold's time off the console's goroutine (the
// new events into the display state and the analysis, and its Result), the spans/s received, the
// spans per CPU-second of this process (the listener and the console together: the senders are
// other processes, as they are other machines), and the heap and RSS once the window holds its 1 M
// events: memory is bounded by the window, not by what was sent.
func BenchmarkListen64Senders(b *testing.B) {
	sc := benchScale
	for b.Loop() {
		o := &listenOpts{cfg: receiver.Config{GRPC: "127.0.0.1:0"}, console: consoleOpts{tick: 60 * time.Millisecond, window: timeline.DefaultWindow}}
		src, err := startListenSource(o, &lineLog{w: io.Discard})
		if err != nil {
			b.Fatal(err)
		}
		m := ui.New(src, ui.Options{Tick: o.console.tick, IsDark: true})
		next := m.Init()
		m.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
		cpu0, start := processCPU(), time.Now()
		senders := startSenders(b, sc, src.l.GRPCAddr().String())
		fig := driveConsole(m, next, func() bool { return senders.running.Load() > 0 })
		elapsed := time.Since(start)
		sent, dropped := senders.wait(b)
		if err := src.l.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
		for range 2 { // pause and resume: the last events, folded now
			m.Update(tea.KeyPressMsg{Code: ' ', Text: " "})
		}
		cpu := processCPU() - cpu0
		tot := src.l.Totals()
		if want := int64(sc.senders * sc.requests * sc.spans); tot.Events != want || tot.Lost != 0 || len(tot.Hosts) != sc.senders || sent != want || dropped != 0 {
			b.Fatalf("received %d events from %d hosts, %d lost; the senders: %d acknowledged, %d given up; want %d from %d", tot.Events, len(tot.Hosts), tot.Lost, sent, dropped, want, sc.senders)
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		fig.report(b)
		b.ReportMetric(float64(tot.Events)/elapsed.Seconds(), "spans/s")
		reportListenCPU(b, tot.Events, cpu)
		snap := src.win.Snapshot()
		b.ReportMetric(float64(snap.Len()), "window-events")
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
		b.ReportMetric(rssBytes()/(1<<20), "rss-MiB")
	}
}

// reportListenCPU reports spans per CPU-second of this process, the listener and the console
// together (where the system measures it): on a shared machine, what listening costs, where the
// wall-clock rate is the senders' pace.
func reportListenCPU(b *testing.B, spans, cpuNs int64) {
	if cpuNs > 0 {
		b.ReportMetric(float64(spans)/(float64(cpuNs)/1e9), "spans/cpu-s")
		b.ReportMetric(float64(cpuNs)/1e9, "listen-cpu-s")
	}
}

// senders are sender processes (this test binary, senderMain) running.
type senders struct {
	outs, errs []bytes.Buffer
	exits      chan error
	running    atomic.Int32
}

// startSenders starts sc.senders sender processes, host h sending to addr.
func startSenders(b *testing.B, sc scale, addr string) *senders {
	s := &senders{outs: make([]bytes.Buffer, sc.senders), errs: make([]bytes.Buffer, sc.senders), exits: make(chan error, sc.senders)}
	for h := range sc.senders {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s;host=%d;addr=%s", senderEnv, sc, h, addr))
		cmd.Stdout, cmd.Stderr = &s.outs[h], &s.errs[h]
		if err := cmd.Start(); err != nil {
			b.Fatalf("start sender %d: %v", h, err)
		}
		s.running.Add(1)
		go func() { s.exits <- cmd.Wait(); s.running.Add(-1) }()
	}
	return s
}

// wait waits for the senders to end and returns the spans they had acknowledged and those they
// gave up on.
func (s *senders) wait(b *testing.B) (sent, dropped int64) {
	for h := range s.outs {
		if err := <-s.exits; err != nil {
			b.Errorf("a sender: %v", err)
		}
		var n, d int64
		if _, err := fmt.Sscanf(s.outs[h].String(), "sent %d dropped %d", &n, &d); err != nil {
			b.Fatalf("sender %d said %q (stderr %q): %v", h, s.outs[h].String(), s.errs[h].String(), err)
		}
		sent, dropped = sent+n, dropped+d
	}
	return sent, dropped
}

// consoleFigures are the times of the frames a console drew under load: each frame (Update and
// View together), its CPU time on the console's thread, View's alone, and each fold's off the
// console's goroutine.
type consoleFigures struct {
	frames, cpu, views, folds []time.Duration
}

// driveConsole runs m as Bubble Tea would from its first command next, until busy() is false (and
// at least one frame was drawn): commands (the tick's timer, the fold) run on their own goroutines
// and their messages come back to this one, which only updates and draws. Every message handled is
// a frame.
func driveConsole(m *ui.Model, next tea.Cmd, busy func() bool) *consoleFigures {
	msgs := make(chan tea.Msg, 64)
	var mu sync.Mutex
	var folds []time.Duration
	var run func(tea.Cmd)
	run = func(cmd tea.Cmd) {
		if cmd == nil {
			return
		}
		go func() {
			t0 := time.Now()
			msg := cmd()
			if batch, ok := msg.(tea.BatchMsg); ok {
				for _, c := range batch {
					run(c)
				}
				return
			}
			if reflect.TypeOf(msg).Name() == "foldedMsg" { // the console's fold, timed off its goroutine
				mu.Lock()
				folds = append(folds, time.Since(t0))
				mu.Unlock()
			}
			select {
			case msgs <- msg:
			case <-time.After(time.Second): // the loop has ended: what it sends now is no one's
			}
		}()
	}
	run(next)
	f := &consoleFigures{}
	runtime.LockOSThread() // so that the thread's CPU time is the frames'
	for busy() || len(f.frames) == 0 {
		msg := <-msgs
		c0, t0 := threadCPU(), time.Now()
		_, cmd := m.Update(msg)
		t1 := time.Now()
		_ = m.View()
		f.frames = append(f.frames, time.Since(t0))
		f.views = append(f.views, time.Since(t1))
		f.cpu = append(f.cpu, time.Duration(threadCPU()-c0))
		run(cmd)
	}
	runtime.UnlockOSThread()
	mu.Lock()
	f.folds = slices.Clone(folds)
	mu.Unlock()
	return f
}

// report reports the figures' p50, p99 and max in ms, and how many frames there were.
func (f *consoleFigures) report(b *testing.B) {
	at := func(d []time.Duration, q float64) float64 {
		slices.Sort(d)
		return float64(d[min(len(d)-1, int(float64(len(d))*q))].Microseconds()) / 1000
	}
	b.ReportMetric(at(f.frames, 0.5), "frame-ms-p50")
	b.ReportMetric(at(f.frames, 0.99), "frame-ms-p99")
	b.ReportMetric(at(f.frames, 1), "frame-ms-max")
	b.ReportMetric(at(f.cpu, 0.5), "frame-cpu-ms-p50")
	b.ReportMetric(at(f.cpu, 0.99), "frame-cpu-ms-p99")
	b.ReportMetric(at(f.views, 0.99), "view-ms-p99")
	if len(f.folds) > 0 {
		b.ReportMetric(at(f.folds, 0.5), "fold-ms-p50")
		b.ReportMetric(at(f.folds, 0.99), "fold-ms-p99")
	}
	b.ReportMetric(float64(len(f.frames)), "frames")
}
