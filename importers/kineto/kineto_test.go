package kineto

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/importers/chrome"
	"github.com/xfertop/xfertop/session"
	"github.com/xfertop/xfertop/timeline"
)

const data = "../../../shared/data/kineto/"

func needData(t testing.TB, name string) string {
	p := filepath.Join(data, name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("real traces not available (%s missing): they live in ../shared/data beside the checkout", p)
	}
	return p
}

// expectedSteps reads what PyTorch's TensorBoard plugin computed for the ResNet-50 trace: per step,
// Memcpy and Memset µs.
func expectedSteps(t *testing.T) map[int][2]int64 {
	raw, err := os.ReadFile(needData(t, "resnet50_tb_profiler_expected.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Steps struct {
			Rows [][]any `json:"rows"`
		} `json:"steps"`
	}
	line := strings.SplitN(string(raw), "\n", 2)[0]
	if err := json.Unmarshal([]byte(line), &doc); err != nil {
		t.Fatal(err)
	}
	out := map[int][2]int64{}
	for _, r := range doc.Steps.Rows {
		n, _ := strconv.Atoi(r[0].(string))
		out[n] = [2]int64{int64(r[3].(float64)), int64(r[5].(float64))}
	}
	return out
}

// Per-step Memcpy and Memset totals of the ResNet-50 trace agree with PyTorch's TensorBoard plugin.
// A GPU op belongs to the step during which the CPU launched it (its runtime call, by correlation).
func TestResNetStepsMatchTensorBoard(t *testing.T) {
	want := expectedSteps(t)
	im, err := ReadFiles([]string{needData(t, "resnet50_v100_worker0.pt.trace.json.gz")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	type span struct {
		n          int
		start, end int64
	}
	var steps []span
	for _, e := range im.Events {
		if e.Kind == timeline.KindStep {
			steps = append(steps, span{int(e.Aux), e.Start, e.End})
		}
	}
	if len(steps) != 6 {
		t.Fatalf("%d ProfilerStep ranges; want 6 (steps 5..10)", len(steps))
	}
	got := map[int][2]int64{}
	for _, e := range im.Events {
		if e.Kind != timeline.KindMemcpy {
			continue
		}
		for _, s := range steps {
			if e.Queued >= s.start && e.Queued < s.end {
				v := got[s.n]
				if timeline.CopyDir(e.Sub) == timeline.CopySet {
					v[1] += e.Dur() / 1000
				} else {
					v[0] += e.Dur() / 1000
				}
				got[s.n] = v
			}
		}
	}
	for n, w := range want {
		g := got[n]
		if g[0] != w[0] || g[1] != w[1] {
			t.Errorf("step %d: memcpy %d µs, memset %d µs; TensorBoard says %d and %d", n, g[0], g[1], w[0], w[1])
		}
	}
}

// Both ranks of the newer-format trace: ranks from distributedInfo, NCCL kernels as collectives,
// copies of every direction with their bytes, launch times from the runtime calls.
func TestSampledRanks(t *testing.T) {
	im, err := ReadFiles([]string{needData(t, "sampled_rank-0.json.gz"), needData(t, "sampled_rank-1.json.gz")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if im.Devices != 2 {
		t.Errorf("%d devices; want 2 ranks", im.Devices)
	}
	dirs := map[timeline.CopyDir]int{}
	var nccl, queued, kernels int
	type rankStep struct {
		dev int32
		n   uint32
	}
	steps := map[rankStep]int{}
	for _, e := range im.Events {
		switch e.Kind {
		case timeline.KindStep:
			// Each rank marks the job's steps: its marks are its device's, so that the analyses
			// take one step number as one step of the job and each rank's ops as in its own.
			steps[rankStep{e.Device, e.Aux}]++
		case timeline.KindMemcpy:
			dirs[timeline.CopyDir(e.Sub)]++
			if e.Bytes <= 0 {
				t.Fatalf("memcpy without bytes: %+v", e)
			}
		case timeline.KindCollective:
			nccl++
			if timeline.CollOp(e.Sub) != timeline.CollSendRecv {
				t.Errorf("NCCL SendRecv kernel imported as %v", timeline.CollOp(e.Sub))
			}
		case timeline.KindKernel:
			kernels++
			if e.Queued >= 0 {
				queued++
			}
		}
	}
	for _, d := range []timeline.CopyDir{timeline.CopyH2D, timeline.CopyD2H, timeline.CopyD2D, timeline.CopySet} {
		if dirs[d] == 0 {
			t.Errorf("no %v copies imported (%v)", d, dirs)
		}
	}
	if want := map[rankStep]int{{0, 551}: 1, {0, 552}: 1, {1, 551}: 1, {1, 552}: 1}; !maps.Equal(steps, want) {
		t.Errorf("steps by rank and number = %v; want %v", steps, want)
	}
	if nccl != 20 {
		t.Errorf("%d NCCL kernels; want 10 per rank", nccl)
	}
	if queued < kernels*9/10 {
		t.Errorf("only %d of %d kernels have a launch time", queued, kernels)
	}
}

func TestNCCLNames(t *testing.T) {
	tests := map[string]timeline.CollOp{
		"ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)":           timeline.CollAllReduce,
		"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, ...)":     timeline.CollAllReduce,
		"ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long)":   timeline.CollAllGather,
		"ncclKernel_ReduceScatter_RING_SIMPLE_Sum_bf16":                  timeline.CollReduceScatter,
		"ncclDevKernel_Broadcast_RING_LL":                                timeline.CollBroadcast,
		"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*)":       timeline.CollSendRecv,
		"ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)": timeline.CollSendRecv,
	}
	for name, want := range tests {
		if got, ok := NCCLOp(name); !ok || got != want {
			t.Errorf("NCCLOp(%q) = %v, %v; want %v", name, got, ok, want)
		}
	}
	if _, ok := NCCLOp("volta_sgemm_64x64_nt"); ok {
		t.Error("a GEMM kernel taken for NCCL")
	}
}

// An .xfr session exported to Chrome JSON imports back to the same events. What cannot survive:
// string ids are renumbered (the text is kept) — every other field is checked.
func TestChromeRoundTrip(t *testing.T) {
	st := timeline.NewStore(nil)
	p, err := session.Prepare(session.Config{Scenario: "crosshost", Steps: 2}, st)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	evs, strs := st.Events(), p.Strings()
	var buf bytes.Buffer
	if err := chrome.Write(&buf, evs, strs, map[string]string{"scenario": "crosshost", "epoch_unix_ns": "42"}); err != nil {
		t.Fatal(err)
	}
	var probe map[string]any
	if err := json.Unmarshal(buf.Bytes(), &probe); err != nil {
		t.Fatalf("export is not valid JSON: %v", err)
	}
	path := filepath.Join(t.TempDir(), "x.json")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	im, err := ReadFiles([]string{path}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if im.Format != "xfertop-chrome" || im.Exported["scenario"] != "crosshost" || im.EpochUnixNs != 42 {
		t.Errorf("format %q meta %v epoch %d", im.Format, im.Exported, im.EpochUnixNs)
	}
	if len(im.Events) != len(evs) {
		t.Fatalf("%d events back; want %d", len(im.Events), len(evs))
	}
	key := func(e timeline.Event, s *timeline.Strings) string {
		lbl := s.Lookup(e.Label)
		e.Label = 0
		b, _ := json.Marshal(e)
		return string(b) + lbl
	}
	var a, b []string
	for i := range evs {
		a = append(a, key(evs[i], strs))
		b = append(b, key(im.Events[i], im.Strings))
	}
	sort.Strings(a)
	sort.Strings(b)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("event differs after the round trip:\n%s\n%s", a[i], b[i])
		}
	}
	// What a person sees in Perfetto: a process per host, named streams, flow arrows, counters.
	s := buf.String()
	for _, want := range []string{`"name":"host 1"`, `"name":"device 8 stream`, `"ph":"s","name":"transfer"`, `"ph":"f"`, `"ph":"C","name":"device 0 GB/s"`} {
		if !strings.Contains(s, want) {
			t.Errorf("export lacks %s", want)
		}
	}
}

// A Chrome trace from an unknown tool still imports: slices become kernels on tracks.
func TestGenericChrome(t *testing.T) {
	src := `{"traceEvents":[{"ph":"X","name":"a","pid":7,"tid":1,"ts":10,"dur":5},{"ph":"X","name":"b","pid":7,"tid":1,"ts":20.5,"dur":1},{"ph":"X","name":"c","pid":"other","tid":"t","ts":12,"dur":2}]}`
	im, err := Import("g.json", strings.NewReader(src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if im.Format != "chrome" || len(im.Events) != 3 || im.Devices != 2 {
		t.Fatalf("format %s, %d events, %d devices", im.Format, len(im.Events), im.Devices)
	}
	if e := im.Events[2]; e.Start != 10_500 || e.End != 11_500 || im.Strings.Lookup(e.Label) != "b" {
		t.Errorf("fractional µs: %+v", e)
	}
}

// A trace in the JSON Array Format (the events alone, in an array) imports as its object form does;
// its array may end without its ']' after a whole event (the Trace Event Format allows that, for a
// tracer stopped while writing), which is said in a warning. An event cut short is still an error.
func TestArrayFormat(t *testing.T) {
	const a, b = `{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":2,"args":{"device":0,"stream":7}}`,
		`{"ph":"X","cat":"kernel","name":"j","pid":0,"tid":7,"ts":5,"dur":2,"args":{"device":0,"stream":7}}`
	object, err := Import("o.json", strings.NewReader(`{"traceEvents":[`+a+`,`+b+`]}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	const unclosed = "the trace's array ends without its closing ']'"
	tests := []struct {
		name, src string
		events    int
		warn      bool
	}{
		{"closed", `[` + a + `,` + b + `]`, 2, false},
		{"spaces around", " \n[ " + a + " , " + b + " ]\n", 2, false},
		{"no ']'", `[` + a + `,` + b, 2, true},
		{"no ']' after a comma", `[` + a + `,` + b + ",\n", 2, true},
		{"no ']' after one event", `[` + a + `,`, 1, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			im, err := Import("a.json", strings.NewReader(tc.src), Options{})
			if err != nil {
				t.Fatalf("Import(%q) = %v", tc.src, err)
			}
			if len(im.Events) != tc.events || im.Format != object.Format {
				t.Fatalf("%d events, format %s; want %d, %s", len(im.Events), im.Format, tc.events, object.Format)
			}
			if tc.events == 2 && !reflect.DeepEqual(im.Events, object.Events) {
				t.Errorf("events %+v; the object form's %+v", im.Events, object.Events)
			}
			if warned := strings.Contains(strings.Join(im.Warnings, "\n"), unclosed); warned != tc.warn {
				t.Errorf("warnings %q; want the unclosed array said: %v", im.Warnings, tc.warn)
			}
		})
	}
	for _, tc := range []struct{ src, want string }{
		{`[` + a[:30], "ends before it is complete, at byte offset 31"},
		{`[` + a + ` ` + b + `]`, "not valid JSON at byte offset 100: expected ',' or ']'"},
		{`[` + a + `] x`, "not valid JSON at byte offset 101: data after the trace array"},
		{`[1]`, "not valid JSON at byte offset 1: a trace event must be an object"},
	} {
		if _, err := Import("a.json", strings.NewReader(tc.src), Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Import(%q) = %v; want %q", tc.src, err, tc.want)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	const xfr = `{"traceEvents":[{"ph":"X","name":"a","pid":0,"tid":0,"ts":1,"dur":1,"args":{"xfertop":`
	tests := []struct{ src, want string }{
		{`{"traceEvents": [ {"ph": "X", `, "ends before it is complete"},
		// Valid JSON whose exported fields lie outside their types: the message says so, not "not valid JSON".
		{xfr + `{"k":1,"o":18446744073709551616}}}]}`, "at byte offset 97: args.xfertop.o: 18446744073709551616 is out of range for the field (uint64)"},
		{xfr + `{"k":1,"d":2147483648}}}]}`, "at byte offset 97: args.xfertop.d: 2147483648 is out of range for the field (int32)"},
		{xfr + `{"k":-1}}}]}`, `at byte offset 91: args.xfertop.k: "-1" is not an integer (the field is uint8)`},
		{xfr + `{"s":"x"}}}]}`, `at byte offset 91: args.xfertop.s: "x" is not an integer (the field is int64)`},
		{xfr + `{"s":[1]}}}]}`, `at byte offset 91: args.xfertop.s is not an integer (the field is int64)`},
		{`{"traceEvents": [ {"ph": "X",, `, "not valid JSON at byte offset 29: expected a quoted key"},
		{`{"foo": 1}`, "no traceEvents array"},
		{`{"traceEvents": [{"ph": 5}]}`, `byte offset 24: event field "ph" must be a string`},
	}
	for _, tc := range tests {
		_, err := Import("bad.json", strings.NewReader(tc.src), Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "bad.json") ||
			(strings.Contains(tc.src, "xfertop") && strings.Contains(err.Error(), "JSON")) {
			t.Errorf("Decode(%q) = %v; want an error naming the file and containing %q", tc.src, err, tc.want)
		}
	}
}
