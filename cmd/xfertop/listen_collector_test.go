package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xfertop/xfertop/report"
)

// collector is a real OpenTelemetry Collector (OTELCOL_BIN, built by .ci/otelcol.sh) on loopback:
// OTLP/gRPC in, batch, OTLP/gRPC out to a listener, and a Prometheus exporter for the metrics.
type collector struct {
	bin, cfg   string
	grpc, prom string // its OTLP/gRPC receiver and its Prometheus /metrics endpoint
	cmd        *exec.Cmd
	exited     chan error
	log        *syncBuffer
}

// collectorBin is the Collector to test with, or skips the test saying how to get one.
func collectorBin(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("OTELCOL_BIN")
	if bin == "" {
		t.Skip("OTELCOL_BIN is not set: these tests need a real OpenTelemetry Collector; build one with OTELCOL_BIN=$(bash .ci/otelcol.sh) (CI does)")
	}
	return bin
}

// freeAddr returns a loopback address nothing listens on (a moment ago).
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startCollector starts a Collector that forwards traces and metrics to the OTLP/gRPC address to.
// Every listener it opens is on 127.0.0.1 (its defaults would bind every interface), and its own
// telemetry is off (it would take port 8888).
func startCollector(t testing.TB, to string) *collector {
	t.Helper()
	c := &collector{bin: collectorBin(t), grpc: freeAddr(t), prom: freeAddr(t), log: &syncBuffer{}}
	c.cfg = filepath.Join(t.TempDir(), "otelcol.yaml")
	cfg := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %s
processors:
  batch:
    timeout: 100ms
exporters:
  otlp_grpc:
    endpoint: %s
    tls:
      insecure: true
    retry_on_failure:
      enabled: true
      initial_interval: 100ms
      max_interval: 1s
      max_elapsed_time: 60s
  prometheus:
    endpoint: %s
    resource_to_telemetry_conversion:
      enabled: true
service:
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [otlp_grpc]
    metrics:
      receivers: [otlp]
      processors: [batch]
      exporters: [otlp_grpc, prometheus]
`, c.grpc, to, c.prom)
	if err := os.WriteFile(c.cfg, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	c.start(t)
	t.Cleanup(func() { c.stop(t, syscall.SIGKILL) })
	return c
}

// start runs the Collector and waits until its OTLP receiver takes connections: it starts its
// receivers last, so the pipeline is ready then.
func (c *collector) start(t testing.TB) {
	t.Helper()
	c.cmd = exec.Command(c.bin, "--config=file:"+c.cfg)
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start the Collector %s: %v", c.bin, err)
	}
	c.exited = make(chan error, 1)
	go func(cmd *exec.Cmd, exited chan error) { exited <- cmd.Wait() }(c.cmd, c.exited)
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", c.grpc, time.Second)
		if err == nil {
			conn.Close()
			return
		}
		select {
		case err := <-c.exited:
			c.cmd = nil
			t.Fatalf("the Collector exited (%v) before its receiver opened %s:\n%s", err, c.grpc, c.log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Collector's receiver did not open %s in 30 s:\n%s", c.grpc, c.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop signals the Collector and waits for it to exit: SIGTERM lets it shut down as it does on a
// restart (receivers stop, the batch is flushed, the exporter's queue drained); SIGKILL is a crash,
// losing what it held.
func (c *collector) stop(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if c.cmd == nil {
		return
	}
	_ = c.cmd.Process.Signal(sig)
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
		t.Errorf("the Collector did not exit in 30 s after %v:\n%s", sig, c.log.String())
	}
	c.cmd = nil
}

// Two hosts of h100x8x2 each export their own share through a real Collector to one listener: the
// merged report is the single-process run's, and the Collector's Prometheus exporter shows the
// numbers of the report.
func TestCollectorMergesHosts(t *testing.T) {
	collectorBin(t)
	want, path := recordRun(t, "--scenario", "crosshost")
	paths := splitByHost(t, path)
	l := startListen(t, "--exit-after-idle", "4s")
	c := startCollector(t, l.grpc)
	sent := replayTo(t, c.grpc, paths)
	if sent == nil {
		t.FailNow()
	}
	got := l.report(t)
	checkMerged(t, want, got, sent)
	// Each host's last collection, at the end of its replay, reached the Prometheus exporter before
	// listen went idle: the values are final, the report's own.
	checkPrometheus(t, scrape(t, c.prom), want)
}

// checkPrometheus compares what the Collector's Prometheus exporter shows with the run's report:
// each GPU's utilization (hw.gpu.utilization, the report's compute %) and each GPU's NIC traffic
// per direction (hw.network.io): a device's transmit + receive is its NIC bytes in the report (the
// run's NIC traffic is sends and receives, whose each end the report counts once), and over the
// devices, transmit is the report's send bytes and receive its recv bytes (to parts per million:
// the link figures are measured, the sends' are their payload).
func checkPrometheus(t *testing.T, got []promSeries, want *report.Report) {
	t.Helper()
	one := func(name string, labels ...string) (float64, bool) {
		var found []float64
		for _, s := range got {
			ok := s.name == name
			for i := 0; ok && i < len(labels); i += 2 {
				ok = s.labels[labels[i]] == labels[i+1]
			}
			if ok {
				found = append(found, s.value)
			}
		}
		if len(found) != 1 {
			t.Errorf("%s%v: %d series; want one", name, labels, len(found))
			return 0, false
		}
		return found[0], true
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }
	if len(want.Idle.Devices) == 0 || len(want.Links.Devices) == 0 {
		t.Fatal("the run's report has no devices")
	}
	for _, d := range want.Idle.Devices {
		dev := strconv.Itoa(int(d.Device))
		if v, ok := one("hw_gpu_utilization_ratio", "xfertop_device", dev, "hw_gpu_task", "general"); ok && !near(v, d.ComputePct/100) {
			t.Errorf("device %s: hw.gpu.utilization %v; the report's compute %% is %v", dev, v, d.ComputePct)
		}
	}
	var tx, rx float64
	for _, d := range want.Links.Devices {
		dev := strconv.Itoa(int(d.Device))
		x, ok1 := one("hw_network_io_bytes_total", "xfertop_device", dev, "xfertop_link", "NIC", "network_io_direction", "transmit")
		r, ok2 := one("hw_network_io_bytes_total", "xfertop_device", dev, "xfertop_link", "NIC", "network_io_direction", "receive")
		if ok1 && ok2 && (x+r != float64(d.NIC) || x == 0 || r == 0) {
			t.Errorf("device %s: NIC transmit %v + receive %v; the report's NIC bytes are %d, both ways", dev, x, r, d.NIC)
		}
		if _, ok := one("hw_network_bandwidth_utilization_ratio", "xfertop_device", dev, "xfertop_link", "NIC", "network_io_direction", "transmit"); !ok {
			t.Errorf("device %s: no NIC utilization", dev)
		}
		tx, rx = tx+x, rx+r
	}
	// The NICs' bytes are the simulator's measurement of its links, integrated from the flows'
	// rates: a flow ends on the nanosecond after its last byte, so they may exceed the payload by a
	// few hundred bytes a flow (parts per million), never fall short of it.
	payload := func(link, ops float64) bool { return link >= ops && link-ops <= 1e-5*ops }
	if s, r := want.Transfers.ByKind["send"], want.Transfers.ByKind["recv"]; !payload(tx, float64(s.Bytes)) || !payload(rx, float64(r.Bytes)) || tx == 0 {
		t.Errorf("NIC transmit %v, receive %v over the devices; the report's sends are %d bytes, receives %d", tx, rx, s.Bytes, r.Bytes)
	}
}

// The Collector restarts while two hosts export through it. While it is down, the hosts' exporters
// retry, so none of their data is dropped. Stopped as a restart stops it (SIGTERM: it drains what it
// holds), nothing is lost at all and the merged report is the run's. Crashed (SIGKILL: what it had
// taken and not yet sent is gone), the exporters cannot know (the Collector had taken it): listen
// counts those events lost, from the gaps in each host's numbered stream. Either way every event of
// the run is received or counted lost, and every span built is counted exported or dropped.
func TestCollectorRestart(t *testing.T) {
	collectorBin(t)
	// 2 s of the run replayed at half speed: 4 s of export (the first 1.8 s are the communicators'
	// setup, with little to send), the Collector down from 2.6 s to 3.4 s. Listen waits 8 s without
	// data before it ends, and 30 s for a gap in a host's stream to fill: longer than the outage, the
	// retries after it, and the Collector's own sending out of order (it exports from several
	// goroutines), on a slow machine and under the race detector too.
	want, path := recordRun(t, "--scenario", "crosshost", "--steps", "300")
	paths := splitByHost(t, path)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			l := startListen(t, "--exit-after-idle", "8s", "--reorder-wait", "30s")
			c := startCollector(t, l.grpc)
			done := make(chan []*report.Report, 1)
			go func() { done <- replayTo(t, c.grpc, paths, "--speed", "0.5") }()
			time.Sleep(2600 * time.Millisecond)
			c.stop(t, sig)
			time.Sleep(800 * time.Millisecond)
			c.start(t)
			sent := <-done
			if sent == nil {
				t.FailNow()
			}
			got := l.report(t)
			var built, exported, dropped int64
			for _, s := range sent {
				x := s.Export
				if x == nil || x.SpansBuilt != x.SpansExported+x.SpansDropped || x.EventsDropped != 0 {
					t.Fatalf("a host's export does not account for its spans: %+v", x)
				}
				built, exported, dropped = built+x.SpansBuilt, exported+x.SpansExported, dropped+x.SpansDropped
			}
			t.Logf("hosts: %d spans built, %d exported, %d dropped; listen: %d spans taken, %d events, %d lost, %d duplicates",
				built, exported, dropped, got.Receive.Spans, got.Events, got.Receive.Lost, got.Receive.Duplicates)
			if dropped != 0 {
				t.Errorf("the hosts dropped %d spans: their retries should have covered the Collector's restart (%q, %q; why: %q, %q)",
					dropped, sent[0].Export.State, sent[1].Export.State, sent[0].Export.DropReason, sent[1].Export.DropReason)
			}
			if got.Receive == nil || got.Events+got.Receive.Lost != want.Events || got.DroppedEvents != got.Receive.Lost {
				t.Fatalf("listen received %d events and counted %d lost (report %+v); the run had %d events",
					got.Events, got.DroppedEvents, got.Receive, want.Events)
			}
			if sig == syscall.SIGTERM || got.Receive.Lost == 0 {
				checkMerged(t, want, got, sent)
			}
		})
	}
}

// promSeries is one sample of a Prometheus text exposition.
type promSeries struct {
	name   string
	labels map[string]string
	value  float64
}

// scrape reads the Collector's Prometheus endpoint.
func scrape(t *testing.T, addr string) []promSeries {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %v %s", addr, err, resp.Status)
	}
	var out []promSeries
	for n, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := parsePromLine(line)
		if err != nil {
			t.Fatalf("scrape %s, line %d: %v: %q", addr, n+1, err, line)
		}
		out = append(out, s)
	}
	return out
}

// parsePromLine reads `name{k="v",...} value [timestamp]`.
func parsePromLine(line string) (promSeries, error) {
	s := promSeries{labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		return s, errors.New("no metric name")
	}
	s.name, line = line[:i], line[i:]
	if line[0] == '{' {
		line = line[1:]
		for !strings.HasPrefix(line, "}") {
			eq := strings.Index(line, `="`)
			if eq <= 0 {
				return s, errors.New("a label without a value")
			}
			key, rest := strings.TrimPrefix(line[:eq], ","), line[eq+2:]
			var v strings.Builder
			for {
				if rest == "" {
					return s, errors.New("an unterminated label value")
				}
				c := rest[0]
				rest = rest[1:]
				if c == '"' {
					break
				}
				if c == '\\' && rest != "" {
					c, rest = rest[0], rest[1:]
					if c == 'n' {
						c = '\n'
					}
				}
				v.WriteByte(c)
			}
			s.labels[key] = v.String()
			line = strings.TrimPrefix(rest, ",")
		}
		line = line[1:]
	}
	f := strings.Fields(line)
	if len(f) == 0 {
		return s, errors.New("no value")
	}
	v, err := strconv.ParseFloat(f[0], 64)
	s.value = v
	return s, err
}
