package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/scenario"
)

// syncBuffer is a buffer written by one goroutine and read by another.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// listening is `xfertop listen` running in the background on free loopback ports.
type listening struct {
	grpc, http     string
	stdout, stderr *syncBuffer
	code           chan int
	cancel         context.CancelFunc
}

var listenLine = regexp.MustCompile(`receiving OTLP on grpc ([0-9.:]+), http ([0-9.:]+)`)

func startListen(t *testing.T, args ...string) *listening {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &listening{stdout: &syncBuffer{}, stderr: &syncBuffer{}, code: make(chan int, 1), cancel: cancel}
	args = append([]string{"listen", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--headless", "--json"}, args...)
	go func() { l.code <- xfertop(ctx, args, l.stdout, l.stderr) }()
	t.Cleanup(cancel)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if m := listenLine.FindStringSubmatch(l.stderr.String()); m != nil {
			l.grpc, l.http = m[1], m[2]
			return l
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("listen did not start: %s", l.stderr.String())
	return nil
}

// report waits for listen to end (by --exit-after-idle) and reads its report.
func (l *listening) report(t *testing.T) *report.Report { return l.reportExit(t, exitOK) }

// stop interrupts listen, as SIGINT does, and reads the report it prints.
func (l *listening) stop(t *testing.T) *report.Report {
	l.cancel()
	return l.reportExit(t, exitInterrupted)
}

func (l *listening) reportExit(t *testing.T, want int) *report.Report {
	t.Helper()
	select {
	case code := <-l.code:
		if code != want {
			t.Fatalf("listen exited %d; want %d: %s", code, want, l.stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("listen did not end: %s", l.stderr.String())
	}
	var r report.Report
	if err := json.Unmarshal([]byte(l.stdout.String()), &r); err != nil {
		t.Fatalf("listen's report: %v\n%s", err, l.stdout.String())
	}
	return &r
}

// analysisSections is everything in a report that the analysis computes (not where the events
// came from or how the run ended).
func analysisSections(t *testing.T, r *report.Report) string {
	c := *r
	c.Source, c.Ended, c.Export, c.Receive, c.Partial, c.DroppedEvents = "", "", nil, nil, nil, 0
	b, err := json.MarshalIndent(c, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func runReport(t *testing.T, args ...string) *report.Report {
	t.Helper()
	var out, errb bytes.Buffer
	code := xfertop(context.Background(), append([]string{"run", "--headless", "--json"}, args...), &out, &errb)
	if code != 0 && code != exitAlert {
		t.Fatalf("run %v exited %d: %s", args, code, errb.String())
	}
	var r report.Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// The round trip: every built-in scenario run with --otlp-detail full into `xfertop listen
// --headless --json` gives the report the run itself gives, over gRPC and over HTTP/protobuf.
func TestListenRoundTrip(t *testing.T) {
	for _, proto := range []string{"grpc", "http/protobuf"} {
		for _, name := range scenario.BuiltinNames() {
			t.Run(strings.ReplaceAll(proto, "/", "_")+"/"+name, func(t *testing.T) {
				// A batch late beyond the default reorder wait (a loaded machine under -race) would
				// be counted lost, then duplicate: this test is about what arrives, not when.
				l := startListen(t, "--reorder-wait", "1m")
				endpoint := l.grpc
				if proto != "grpc" {
					endpoint = "http://" + l.http
				}
				sent := runReport(t, "--scenario", name, "--otlp", endpoint, "--otlp-protocol", proto, "--otlp-detail", "full", "--otlp-shutdown-timeout", "20s")
				// Every span the run exported was taken before it returned: the report is complete now.
				got := l.stop(t)
				if x := sent.Export; x == nil || x.SpansDropped != 0 || x.SpansExported != x.SpansBuilt || x.EventsDropped != 0 {
					t.Fatalf("the export lost data: %+v", x)
				}
				if got.Receive == nil || got.Receive.Lost != 0 || got.Receive.Spans != sent.Export.SpansExported || len(got.Partial) != 0 {
					t.Fatalf("received %+v, partial %v; want every span the run exported (%d), none lost", got.Receive, got.Partial, sent.Export.SpansExported)
				}
				if a, b := analysisSections(t, sent), analysisSections(t, got); a != b {
					t.Errorf("the report of what listen received differs from the run's:\n%s", lineDiff(a, b))
				}
			})
		}
	}
}

// With the default detail, the report says which parts are partial. Listen ends by itself after
// --exit-after-idle.
func TestListenPartial(t *testing.T) {
	t.Parallel()
	l := startListen(t, "--exit-after-idle", "3s")
	sent := runReport(t, "--scenario", "straggler", "--otlp", l.grpc, "--otlp-shutdown-timeout", "20s")
	got := l.report(t)
	if len(got.Partial) == 0 {
		t.Fatal("a report from default-detail spans does not say it is partial")
	}
	if got.Steps.Count != sent.Steps.Count || got.Barriers.Count != sent.Barriers.Count {
		t.Errorf("steps %d barriers %d; want the run's %d and %d (spans carry both)", got.Steps.Count, got.Barriers.Count, sent.Steps.Count, sent.Barriers.Count)
	}
	var text bytes.Buffer
	if err := report.Text(&text, got); err != nil || !strings.Contains(text.String(), "PARTIAL") {
		t.Errorf("the text report does not say PARTIAL: %v\n%s", err, text.String())
	}
}

// Two runs of different scenarios export to one listener at once: they are two jobs, so the report
// is one job's alone (all its events, on its one host), and names the other as left out: mixing them
// made one job of two runs' steps on the same GPUs.
func TestListenTwoSenders(t *testing.T) {
	l := startListen(t)
	var wg sync.WaitGroup
	for _, name := range []string{"straggler", "copy-sweep"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out, errs bytes.Buffer
			// A generous shutdown budget: on a loaded machine the last spans may take a while.
			args := []string{"run", "--headless", "--scenario", name, "--otlp", l.grpc, "--otlp-detail", "full", "--otlp-shutdown-timeout", "20s"}
			if code := xfertop(context.Background(), args, &out, &errs); code != exitOK {
				t.Errorf("%s: exit %d: %s", name, code, errs.String())
			}
		}()
	}
	wg.Wait()
	got := l.stop(t)
	// The runs' events: 1074 and 626 (one with its link windows), whichever came first kept.
	if got.Receive == nil || len(got.Receive.Hosts) != 1 || got.Events != 1074 && got.Events != 626 || len(got.Receive.OtherJobs) != 1 ||
		!strings.Contains(got.Receive.OtherJobs[0], "is another job (it ran") || got.Receive.Invalid != 1074+626-got.Events {
		t.Fatalf("received %+v, %d events; want one job's host and events (1074 or 626) and the other job named, its spans left out", got.Receive, got.Events)
	}
}

// lineDiff shows the first lines where a and b differ.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for i := 0; i < max(len(al), len(bl)) && len(out) < 20; i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			out = append(out, "- "+x, "+ "+y)
		}
	}
	return strings.Join(out, "\n")
}

// Exposed addresses without TLS and a token are usage errors naming the flag; nothing sent before
// the idle timeout is a data error.
func TestListenRefusals(t *testing.T) {
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--grpc", "0.0.0.0:4317", "--headless"}, exitUsage, "--grpc 0.0.0.0:4317 is not a loopback address"},
		{[]string{"--grpc", "", "--http", ":4318", "--headless"}, exitUsage, "--http :4318 is not a loopback address"},
		{[]string{"--grpc", "", "--http", "", "--headless"}, exitUsage, "nothing to listen on"},
		{[]string{"--grpc", "127.0.0.1:0", "--http", "", "--auth-token-file", "/nonexistent", "--headless"}, exitUsage, "--auth-token-file"},
		{[]string{"--grpc", "127.0.0.1:0", "--http", "", "--headless", "--exit-after-idle", "100ms"}, exitData, "no xfertop spans came"},
	}
	for _, tc := range tests {
		var out, errb bytes.Buffer
		code := xfertop(context.Background(), append([]string{"listen"}, tc.args...), &out, &errb)
		if code != tc.code || !strings.Contains(errb.String(), tc.msg) {
			t.Errorf("listen %v: exit %d, %q; want %d and %q", tc.args, code, errb.String(), tc.code, tc.msg)
		}
	}
}

// A sender whose spans say absurd things (start 0, end 2^64−1, seq 2^63−1, on 10 000 spans) does
// not corrupt the merged report: they are left out, counted, and logged; the good spans beside
// them make the report; nothing is lost, nothing is negative, no duration is centuries long.
func TestListenLeavesOutAbsurdSpans(t *testing.T) {
	epoch := time.Now().UnixNano()
	res := &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
		kv("service.name", "xfertop"), kv("host.name", "host-0"), kv("xfertop.host", 0),
		kv("xfertop.session", "absurd"), kv("xfertop.detail", "full"),
		kv("xfertop.meta.epoch_unix_ns", strconv.FormatInt(epoch, 10)), kv("xfertop.meta.gpus_per_host", "8")}}
	span := func(seq int, start, end uint64) *tracepb.Span {
		return &tracepb.Span{Name: "kernel", StartTimeUnixNano: start, EndTimeUnixNano: end,
			Attributes: []*commonpb.KeyValue{kv("xfertop.kind", "kernel"), kv("xfertop.device", 0), kv("xfertop.stream", 1),
				kv("xfertop.seq", seq), kv("xfertop.label", "gemm")}}
	}
	spans := []*tracepb.Span{span(0, uint64(epoch), uint64(epoch+1000)), span(1, uint64(epoch+2000), uint64(epoch+3000))}
	for range 10_000 {
		spans = append(spans, span(1<<63-1, 0, 1<<64-1))
	}
	body, err := proto.Marshal(&collectortrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: res, ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}}}})
	if err != nil {
		t.Fatal(err)
	}
	// The request is built before listen starts: under the race detector on a loaded machine,
	// building 10 000 spans took longer than listen's idle limit.
	l := startListen(t, "--exit-after-idle", "3s")
	resp, err := http.Post("http://"+l.http+"/v1/traces", "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	r := l.report(t)
	if r.Receive == nil || r.Receive.Invalid != 10_000 || r.Receive.Lost != 0 || r.Receive.Spans != 2 || r.Events != 2 {
		t.Fatalf("receive %+v, %d events; want 10000 invalid spans, 2 taken, 0 lost", r.Receive, r.Events)
	}
	if r.DurationNs != 3000 || r.DroppedEvents != 0 || r.Idle.TotalNs < 0 || r.Idle.TotalNs > r.DurationNs {
		t.Errorf("duration %d ns, dropped %d, idle %d ns; want 3000 ns, 0 dropped, idle within the run", r.DurationNs, r.DroppedEvents, r.Idle.TotalNs)
	}
	if !strings.Contains(l.stderr.String(), "left out a span from host-0") {
		t.Errorf("stderr %q; want the refused spans logged", l.stderr.String())
	}
}

// diskFull takes room bytes, then fails every write as a full file system does (ENOSPC).
type diskFull struct {
	mu   sync.Mutex
	room int
}

func (d *diskFull) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := min(len(p), d.room)
	d.room -= n
	if n < len(p) {
		return n, &os.PathError{Op: "write", Path: "full.xfr", Err: syscall.ENOSPC}
	}
	return n, nil
}

// listen --record on a disk that fills up: it says so at once, stops acknowledging what it can
// no longer keep (a headless listen ends, as a run does), prints the report of what it took, and
// exits 1 naming the recording and the cause.
func TestListenRecordDiskFull(t *testing.T) {
	createRecording = func(path string, _ ...recordings.WriterOption) (*recordings.Writer, error) {
		return recordings.NewWriter(path, &diskFull{room: 1024})
	}
	t.Cleanup(func() { createRecording = recordings.Create })
	path := filepath.Join(t.TempDir(), "full.xfr")
	l := startListen(t, "--record", path)
	epoch := time.Now().UnixNano()
	res := &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
		kv("service.name", "xfertop"), kv("host.name", "host-0"), kv("xfertop.host", 0),
		kv("xfertop.session", "full"), kv("xfertop.detail", "full"),
		kv("xfertop.meta.epoch_unix_ns", strconv.FormatInt(epoch, 10)), kv("xfertop.meta.gpus_per_host", "8")}}
	var spans []*tracepb.Span
	for i := range 2000 {
		start := uint64(epoch + int64(i)*1000)
		spans = append(spans, &tracepb.Span{Name: "kernel", StartTimeUnixNano: start, EndTimeUnixNano: start + 900,
			Attributes: []*commonpb.KeyValue{kv("xfertop.kind", "kernel"), kv("xfertop.device", i%8), kv("xfertop.stream", 1),
				kv("xfertop.seq", i), kv("xfertop.label", "gemm"+strconv.Itoa(i))}})
	}
	body, err := proto.Marshal(&collectortrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: res, ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}}}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post("http://"+l.http+"/v1/traces", "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("first request: %s; want it taken", resp.Status)
	}
	r := l.reportExit(t, exitFailure) // ends by itself once the recording fails: no idle timeout given
	if r.Events != 2000 || r.Receive == nil || r.Receive.Spans != 2000 {
		t.Errorf("report of %d events, receive %+v; want the 2000 taken", r.Events, r.Receive)
	}
	errs := l.stderr.String()
	for _, want := range []string{
		"--record " + path + " cannot be written (no space left on device): no longer acknowledging requests",
		"xfertop listen: --record " + path + ": no space left on device; listen stopped acknowledging",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr %q; want %q", errs, want)
		}
	}
}
