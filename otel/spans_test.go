package otel

import (
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/xfertop/xfertop/timeline"
)

func attr(sp spanSpec, k attribute.Key) (attribute.Value, bool) {
	for _, a := range sp.attrs {
		if a.Key == k {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

func find(specs []spanSpec, name string, dev int64) int {
	for i, s := range specs {
		if d, _ := attr(s, AttrDevice); s.name == name && d.AsInt64() == dev {
			return i
		}
	}
	return -1
}

// One step: device 0 sends 1 MB to device 1 inside a group (with a 5 µs peer wait first), an H2D copy,
// a barrier where rank 1 is late, and a send that timed out with an alert.
func TestBuildStep(t *testing.T) {
	labels := labelTable{"", "watchdog: send op 9 from rank 2 waited 2000 ms"}
	nd := timeline.NoDevice
	evs := []timeline.Event{
		{Kind: timeline.KindPeerWait, Op: 5, Device: 0, Peer: 1, Start: 100, End: 105_100},
		{Kind: timeline.KindSend, Op: 5, Device: 0, Peer: 1, Stream: 3, Group: 7, Bytes: 1_000_000, Start: 105_100, End: 115_100, Priority: -3},
		{Kind: timeline.KindRecv, Op: 5, Device: 1, Peer: 0, Stream: 4, Group: 8, Bytes: 1_000_000, Start: 105_100, End: 115_100, Host: 1},
		{Kind: timeline.KindGroupLaunch, Group: 7, Aux: 1, Device: 0, Peer: nd, Stream: 3, Start: 100, End: 115_100},
		{Kind: timeline.KindGroupLaunch, Group: 8, Aux: 1, Device: 1, Peer: nd, Stream: 4, Start: 100, End: 115_100, Host: 1},
		{Kind: timeline.KindMemcpy, Sub: uint8(timeline.CopyH2D), Device: 0, Peer: nd, Stream: 2, Bytes: 64, Start: 0, End: 10},
		{Kind: timeline.KindBarrier, Op: 6, Ranks: 2, Barrier: 1, Device: 0, Peer: nd, Stream: 1, Start: 200, End: 900},
		{Kind: timeline.KindBarrier, Op: 6, Ranks: 2, Barrier: 1, Device: 1, Peer: nd, Stream: 5, Start: 800, End: 900, Host: 1},
		{Kind: timeline.KindPeerWait, Op: 9, Device: 2, Peer: 3, Start: 1000, End: 2_000_001_000},
		{Kind: timeline.KindSend, Op: 9, Device: 2, Peer: 3, Stream: 6, Start: 2_000_001_000, End: 2_000_001_000, Status: timeline.StatusTimeout},
		{Kind: timeline.KindAlert, Op: 9, Device: 2, Peer: 3, Label: 1, Status: timeline.StatusTimeout},
		{Kind: timeline.KindKernel, Device: 0, Stream: 1, Start: 0, End: 100}, // kernels are not exported
	}
	step := timeline.Event{Kind: timeline.KindStep, Aux: 4, Start: 0, End: 2_000_002_000, Status: timeline.StatusError}
	specs := buildStep(&step, evs, labels, "pipeline", Filter{})
	if len(specs) != 9 || specs[0].name != "step 4" || specs[0].parent != -1 {
		t.Fatalf("%d specs, root %+v", len(specs), specs[0])
	}
	send, recv := find(specs, "send", 0), find(specs, "recv", 1)
	g0, g1 := find(specs, "group", 0), find(specs, "group", 1)
	if specs[send].parent != g0 || specs[recv].parent != g1 || specs[g0].parent != 0 {
		t.Errorf("group parents: send→%d (group %d), recv→%d (group %d)", specs[send].parent, g0, specs[recv].parent, g1)
	}
	if len(specs[send].links) != 1 || specs[send].links[0] != recv || specs[recv].links[0] != send {
		t.Errorf("send/recv links: %v %v", specs[send].links, specs[recv].links)
	}
	if v, _ := attr(specs[send], AttrWaitNs); v.AsInt64() != 105_000 {
		t.Errorf("send wait %v; want the 105 µs peer wait", v)
	}
	if v, _ := attr(specs[send], AttrGBps); v.AsFloat64() != 100 {
		t.Errorf("send GB/s %v; want 1 MB in 10 µs = 100", v)
	}
	if specs[recv].host != 1 {
		t.Error("the receive belongs to host 1")
	}
	late, early := find(specs, "barrier wait", 1), find(specs, "barrier wait", 0)
	if v, _ := attr(specs[late], AttrStraggler); !v.AsBool() {
		t.Error("rank 1 arrived last: straggler")
	}
	if v, _ := attr(specs[early], AttrWaitNs); v.AsInt64() != 700 {
		t.Errorf("rank 0 waited %v; want 700", v)
	}
	stuck := find(specs, "send", 2)
	if specs[stuck].errMsg != labels[1] || specs[stuck].start != 1000 {
		t.Errorf("timed-out send: %+v; want error status with the alert and the span over its wait", specs[stuck])
	}
	if specs[0].errMsg == "" {
		t.Error("the failed step's root has no error status")
	}
	if find(specs, "kernel", 0) >= 0 {
		t.Error("kernels are not exported")
	}
	// With a 1 ms minimum, the short spans go, the group spans go with their members, the failed
	// send and the step stay.
	min := buildStep(&step, evs, labels, "", Filter{MinSpanNs: 1_000_000})
	if len(min) != 2 || min[1].errMsg == "" {
		t.Errorf("filtered: %d specs: %+v", len(min), min)
	}
}

func TestSampledWholeSteps(t *testing.T) {
	kept := 0
	first := make([]bool, 10_000)
	for n := range uint32(10_000) {
		first[n] = sampled(n, 0.25)
		if first[n] {
			kept++
		}
	}
	for n := range uint32(10_000) {
		if sampled(n, 0.25) != first[n] {
			t.Fatalf("step %d: sampling changed between passes", n)
		}
	}
	if kept < 2300 || kept > 2700 {
		t.Errorf("ratio 0.25 kept %d of 10 000 steps", kept)
	}
}

func TestResolve(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	tests := []struct {
		flag     string
		env      map[string]string
		ok       bool
		endpoint string
		protocol string
		insecure bool
		service  string
		noMetric bool
		err      string
	}{
		{flag: "", env: nil, ok: false},
		{flag: "localhost:4317", ok: true, endpoint: "http://localhost:4317", protocol: "grpc", insecure: true, service: "xfertop"},
		{flag: "https://collector:4317", ok: true, endpoint: "https://collector:4317", protocol: "grpc", service: "xfertop"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_SERVICE_NAME": "train"},
			ok: true, endpoint: "http://c:4318", protocol: "http/protobuf", insecure: true, service: "train"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:1", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:2"}, ok: true, endpoint: "http://b:2", protocol: "grpc", insecure: true, service: "xfertop"},
		{flag: "x:1", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, err: `OTLP protocol "http/json"`},
		{flag: "ftp://x:1", err: `OTLP endpoint "ftp://x:1"`},
		{flag: "x:1", env: map[string]string{"OTEL_METRICS_EXPORTER": "none"}, ok: true, endpoint: "http://x:1", protocol: "grpc", insecure: true, service: "xfertop", noMetric: true},
		{flag: "x:1", env: map[string]string{"OTEL_METRICS_EXPORTER": "otlp"}, ok: true, endpoint: "http://x:1", protocol: "grpc", insecure: true, service: "xfertop"},
		{flag: "x:1", env: map[string]string{"OTEL_METRICS_EXPORTER": "prometheus"}, err: `OTEL_METRICS_EXPORTER "prometheus"`},
	}
	for _, tc := range tests {
		cfg, ok, err := Resolve(tc.flag, env(tc.env))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Resolve(%q, %v) error %v; want %q", tc.flag, tc.env, err, tc.err)
			}
			continue
		}
		if err != nil || ok != tc.ok {
			t.Errorf("Resolve(%q, %v) = ok %v err %v", tc.flag, tc.env, ok, err)
			continue
		}
		if ok && (cfg.Endpoint != tc.endpoint || cfg.Protocol != tc.protocol || cfg.Insecure != tc.insecure || cfg.ServiceName != tc.service || cfg.NoMetrics != tc.noMetric) {
			t.Errorf("Resolve(%q, %v) = %+v", tc.flag, tc.env, cfg)
		}
	}
}

// An op a CUDA graph replayed carries xfertop.graph.captured; one launched on its own does not.
func TestGraphCapturedAttr(t *testing.T) {
	for _, captured := range []bool{false, true} {
		e := timeline.Event{Kind: timeline.KindKernel, Start: 1, End: 2, Device: 0, Peer: -1, Stream: 3}
		if captured {
			e.Aux |= timeline.AuxCaptured
		}
		got := false
		for _, kv := range eventAttrs(&e, nil) {
			if kv.Key == AttrGraphCaptured && kv.Value.AsBool() {
				got = true
			}
		}
		if got != captured {
			t.Errorf("captured %v: attribute set %v", captured, got)
		}
	}
}

// An emulated op (--fit on shared GPUs) carries xfertop.emulated and no xfertop.gbps: a 1 GiB
// all-reduce of ranks on one GPU "took" 6.8 µs, 158,000 GB/s of nothing moved. A real one has its
// rate and no mark.
func TestEmulatedAttr(t *testing.T) {
	for _, emulated := range []bool{false, true} {
		e := timeline.Event{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Start: 0, End: 6800, Device: 0, Peer: -1, Stream: 3,
			Ranks: 8, Bytes: 1 << 30}
		if emulated {
			e.Aux |= timeline.AuxEmulated
		}
		mark, rate := false, false
		for _, kv := range eventAttrs(&e, nil) {
			mark = mark || kv.Key == AttrEmulated && kv.Value.AsBool()
			rate = rate || kv.Key == AttrGBps
		}
		if mark != emulated || rate == emulated {
			t.Errorf("emulated %v: xfertop.emulated %v, xfertop.gbps %v; want %v, %v", emulated, mark, rate, emulated, !emulated)
		}
	}
}

// A gRPC endpoint is shown as its target, host:port, not as the http:// URL that tells the SDK it
// is plaintext; an HTTP endpoint stays a URL.
func TestShownEndpoint(t *testing.T) {
	for _, tc := range []struct{ endpoint, protocol, want string }{
		{"http://127.0.0.1:24317", "grpc", "127.0.0.1:24317"},
		{"https://collector:4317", "grpc", "collector:4317 (TLS)"},
		{"http://127.0.0.1:4318", "http/protobuf", "http://127.0.0.1:4318"},
	} {
		if got := ShownEndpoint(tc.endpoint, tc.protocol); got != tc.want {
			t.Errorf("ShownEndpoint(%q, %q) = %q; want %q", tc.endpoint, tc.protocol, got, tc.want)
		}
	}
}

// An op of unknown time (a Flight Recorder entry not retired, without duration_ms) carries
// xfertop.time_unknown, so that its span's 0 length does not read as a duration; one of known
// time does not.
func TestTimeUnknownAttr(t *testing.T) {
	for _, unknown := range []bool{false, true} {
		e := timeline.Event{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Start: 100, End: 100, Device: 0, Peer: -1, Stream: 3,
			Ranks: 2, Bytes: 1 << 20}
		if unknown {
			e.Aux |= timeline.AuxTimeUnknown
		}
		got := false
		for _, kv := range eventAttrs(&e, nil) {
			if kv.Key == AttrTimeUnknown && kv.Value.AsBool() {
				got = true
			}
		}
		if got != unknown {
			t.Errorf("time unknown %v: attribute set %v", unknown, got)
		}
	}
}
