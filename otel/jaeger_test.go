package otel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xfertop/xfertop/session"
)

// jaeger is a real Jaeger v2 (all listeners on loopback) started for one test.
type jaeger struct {
	cmd  *exec.Cmd
	base int
}

func (j *jaeger) otlpGRPC() string { return fmt.Sprintf("127.0.0.1:%d", j.base+317) }
func (j *jaeger) query() string    { return fmt.Sprintf("http://127.0.0.1:%d", j.base+686) }

func freeBase() int {
	for {
		base := 20000 + rand.Intn(30000)
		ok := true
		for _, off := range []int{133, 317, 318, 685, 686} {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+off))
			if err != nil {
				ok = false
				break
			}
			l.Close()
		}
		if ok {
			return base
		}
	}
}

func startJaeger(t *testing.T) *jaeger {
	t.Helper()
	bin := os.Getenv("JAEGER_BIN")
	if bin == "" {
		t.Skip("JAEGER_BIN is not set: build Jaeger with ../shared/scripts/jaeger.sh and set JAEGER_BIN to run the Jaeger integration tests (.ci/run does)")
	}
	script, _ := filepath.Abs(filepath.Join("..", "..", "shared", "scripts", "jaeger.sh"))
	if _, err := os.Stat(script); err != nil {
		t.Skipf("JAEGER_BIN is set but %s, which writes Jaeger's loopback config, is missing", script)
	}
	base := freeBase()
	out, err := exec.Command("bash", script, "config", fmt.Sprint(base)).Output()
	if err != nil {
		t.Fatalf("jaeger.sh config: %v", err)
	}
	j := &jaeger{base: base, cmd: exec.Command(bin, "--config=file:"+strings.TrimSpace(string(out)))}
	j.cmd.Stdout, j.cmd.Stderr = os.Stderr, os.Stderr
	if err := j.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(j.stop)
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/status", base+133))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return j
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("Jaeger did not become healthy within 90 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (j *jaeger) stop() {
	if j.cmd.Process != nil {
		_ = j.cmd.Process.Kill()
		_, _ = j.cmd.Process.Wait()
	}
}

// Jaeger's query API, the parts the tests read.
type jTrace struct {
	TraceID   string              `json:"traceID"`
	Spans     []jSpan             `json:"spans"`
	Processes map[string]jProcess `json:"processes"`
}

type jSpan struct {
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	ProcessID     string `json:"processID"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []jTag `json:"tags"`
}

type jTag struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
}

type jProcess struct {
	ServiceName string `json:"serviceName"`
	Tags        []jTag `json:"tags"`
}

func (j *jaeger) traces(t *testing.T, service string) []jTrace {
	t.Helper()
	resp, err := http.Get(j.query() + "/api/traces?limit=1000&lookback=2h&service=" + service)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Data []jTrace `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out.Data
}

func spanCount(ts []jTrace) int {
	n := 0
	for _, tr := range ts {
		n += len(tr.Spans)
	}
	return n
}

func tag(tags []jTag, key string) (any, bool) {
	for _, tg := range tags {
		if tg.Key == key {
			return tg.Value, true
		}
	}
	return nil, false
}

// A small scenario exported to a real Jaeger: the spans Jaeger holds are exactly those the run says
// it exported, each host is its own process, attributes and send/recv links are there, and every
// span but a step's root is the child of a span of the same trace (group members of their group).
func TestJaeger(t *testing.T) {
	j := startJaeger(t)
	service := fmt.Sprintf("xfertop-test-%d", time.Now().UnixNano())
	cfg := configFor(t, j.otlpGRPC(), "grpc")
	cfg.ServiceName = service
	// Prepared plans launch each device's transfers as one NCCL group: group spans with children.
	p, _ := exportRun(t, "crosshost", 2, 0, cfg, "prepared=on")
	st := p.ExportStats()
	if st.SpansExported == 0 || st.SpansExported != st.SpansBuilt {
		t.Fatalf("stats %+v", st)
	}
	var ts []jTrace
	for deadline := time.Now().Add(20 * time.Second); ; {
		ts = j.traces(t, service)
		if int64(spanCount(ts)) >= st.SpansExported || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if got := spanCount(ts); int64(got) != st.SpansExported {
		t.Fatalf("Jaeger holds %d spans; the run says it exported %d", got, st.SpansExported)
	}
	if len(ts) != 2 {
		t.Errorf("%d traces; want one per step (2)", len(ts))
	}
	// One trace by id, as /api/traces/<id> gives it.
	resp, err := http.Get(j.query() + "/api/traces/" + ts[0].TraceID)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/traces/%s: %v %v", ts[0].TraceID, err, resp.Status)
	}
	resp.Body.Close()
	var links, grouped int
	for _, tr := range ts {
		hosts := map[string]bool{}
		for _, pr := range tr.Processes {
			if h, ok := tag(pr.Tags, "host.name"); ok {
				hosts[fmt.Sprint(h)] = true
			}
			if pr.ServiceName != service {
				t.Errorf("process service %q; want %q", pr.ServiceName, service)
			}
		}
		if !hosts["host-0"] || !hosts["host-1"] || len(tr.Processes) < 2 {
			t.Errorf("trace %s: processes %v; want host-0 and host-1 as separate processes", tr.TraceID, hosts)
		}
		byID := map[string]jSpan{}
		for _, s := range tr.Spans {
			byID[s.SpanID] = s
		}
		roots := 0
		for _, s := range tr.Spans {
			parent := ""
			for _, r := range s.References {
				switch r.RefType {
				case "CHILD_OF":
					parent = r.SpanID
				case "FOLLOWS_FROM":
					if o, ok := byID[r.SpanID]; ok && r.TraceID == tr.TraceID && (o.OperationName == "send" || o.OperationName == "recv") {
						links++
					}
				}
			}
			if parent == "" {
				roots++
				if !strings.HasPrefix(s.OperationName, "step ") {
					t.Errorf("span %s (%s) has no parent", s.SpanID, s.OperationName)
				}
				continue
			}
			p, ok := byID[parent]
			if !ok {
				t.Errorf("span %s's parent %s is not in its trace", s.OperationName, parent)
				continue
			}
			if (s.OperationName == "send" || s.OperationName == "recv") && p.OperationName == "group" {
				grouped++
			}
			if s.OperationName == "send" {
				if _, ok := tag(s.Tags, "xfertop.bytes"); !ok {
					t.Errorf("send span without xfertop.bytes: %v", s.Tags)
				}
				if _, ok := tag(s.Tags, "xfertop.gbps"); !ok {
					t.Errorf("send span without xfertop.gbps")
				}
			}
		}
		if roots != 1 {
			t.Errorf("trace %s has %d roots", tr.TraceID, roots)
		}
	}
	if links == 0 || grouped == 0 {
		t.Errorf("%d send/recv links and %d grouped transfers; want both", links, grouped)
	}
}

// Jaeger stops in the middle of a run: the run finishes, the report says how many spans were
// dropped, and nothing else is lost.
func TestJaegerStopsMidRun(t *testing.T) {
	j := startJaeger(t)
	cfg := configFor(t, j.otlpGRPC(), "grpc")
	cfg.ServiceName = fmt.Sprintf("xfertop-stop-%d", time.Now().UnixNano())
	cfg.RetryFor, cfg.ExportTimeout = time.Second, 500*time.Millisecond
	p, err := session.Prepare(session.Config{Scenario: "pipeline", Steps: 10, Speed: 3, Export: cfg})
	if err != nil {
		t.Fatal(err)
	}
	// Jaeger stops once it has taken spans (not at a fixed time: a loaded machine may export later),
	// while the paced run still has most of its steps to go.
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if s := p.ExportStats(); s != nil && s.SpansExported > 0 {
				break
			}
		}
		j.stop()
	}()
	out, err := p.Run(context.Background())
	<-stopped
	if err != nil || out.Steps != 10 {
		t.Fatalf("run: %d steps, %v", out.Steps, err)
	}
	r := p.Report(out)
	if r.Export == nil || r.Export.SpansDropped+r.Export.EventsDropped == 0 || r.Export.SpansExported == 0 {
		t.Fatalf("report export %+v; want spans exported before the stop and drops after", r.Export)
	}
	base, baseOut := exportRun(t, "pipeline", 10, 0, nil)
	if want := base.Report(baseOut).Events; r.Events != want || r.Steps.Count != 10 {
		t.Errorf("%d events and %d steps with Jaeger stopping; %d events without export", r.Events, r.Steps.Count, want)
	}
	t.Logf("export %+v", *r.Export)
}
