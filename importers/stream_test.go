package importers

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/importers/chrome"
	"github.com/xfertop/xfertop/importers/kineto"
	"github.com/xfertop/xfertop/importers/nsys"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

const sample = "../recordings/samples/overlap.xfr"

// TestStreamRecording: a recording streams the events, description, outcome and labels that the
// recordings reader reads, telling progress up to its last chunk.
func TestStreamRecording(t *testing.T) {
	want, err := recordings.ReadFile(sample, recordings.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got Collect
	var done, total int64
	res, err := Stream([]string{sample}, Options{Progress: func(d, t int64) { done, total = d, t }}, &got)
	if err != nil {
		t.Fatal(err)
	}
	if res.Format != FormatRecording || res.Events != len(want.Events) || !reflect.DeepEqual(got.All, want.Events) {
		t.Fatalf("format %v, %d events (%d kept); want a recording of %d", res.Format, res.Events, len(got.All), len(want.Events))
	}
	if !reflect.DeepEqual(got.Header.Meta, want.Meta) || !reflect.DeepEqual(res.Outcome, want.Outcome) ||
		!reflect.DeepEqual(got.Header.Strings.All(), want.Strings.All()) {
		t.Error("the description, outcome or labels differ from the recording's")
	}
	if total == 0 || done != total {
		t.Errorf("progress ended at %d of %d", done, total)
	}
}

// TestStreamTrace: a trace, whatever its name, streams the events its importer reads, with a
// description built from it, in batches.
func TestStreamTrace(t *testing.T) {
	rec, err := recordings.ReadFile(sample, recordings.Options{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "export.bin")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := chrome.Write(f, rec.Events, rec.Strings, map[string]string{"scenario": "overlap"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	want, err := kineto.ReadFiles([]string{path}, kineto.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got Collect
	batches := 0
	res, err := Stream([]string{path}, Options{Writer: "w"}, sinkFuncs{&got, func() { batches++ }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Format != FormatTrace || !reflect.DeepEqual(got.All, want.Events) {
		t.Fatalf("format %v, %d events; want a trace of %d", res.Format, len(got.All), len(want.Events))
	}
	if m := got.Header.Meta; m.Scenario != "overlap" || m.Writer != "w" {
		t.Errorf("meta %+v: want the export's scenario and the writer given", m)
	}
	if wantBatches := (len(want.Events) + recordings.DefaultBatch - 1) / recordings.DefaultBatch; batches != wantBatches {
		t.Errorf("%d batches, want %d", batches, wantBatches)
	}
}

// sinkFuncs counts the batches a Collect receives.
type sinkFuncs struct {
	*Collect
	batch func()
}

func (s sinkFuncs) Events(b []timeline.Event) error { s.batch(); return s.Collect.Events(b) }

// failing is a Sink that refuses.
type failing struct{ err error }

func (f failing) Begin(*Header) error           { return f.err }
func (f failing) Events([]timeline.Event) error { return f.err }

// TestStreamErrors: a sink's error comes back as it is; mixed formats and several recordings are
// refused before anything is read.
func TestStreamErrors(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "a.json")
	db := filepath.Join(dir, "b.sqlite")
	if err := os.WriteFile(trace, []byte(`{"traceEvents":[{"ph":"X","name":"k","ts":1,"dur":2,"pid":0,"tid":0}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, []byte(sqliteMagic), 0o644); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("sink full")
	for _, p := range []string{sample, trace} {
		if _, err := Stream([]string{p}, Options{}, failing{stop}); !errors.Is(err, stop) {
			t.Errorf("%s: %v, want the sink's error", p, err)
		}
	}
	for _, paths := range [][]string{{trace, db}, {sample, sample}, {sample, trace}, nil} {
		if _, err := Stream(paths, Options{}, failing{stop}); err == nil || errors.Is(err, stop) {
			t.Errorf("%v: %v, want a refusal before reading", paths, err)
		}
	}
}

// TestStreamNsys: an Nsight Systems export streams, in batches of at most a recording's, the events
// its importer reads, with a description made before the first of them; a sink's error stops it.
func TestStreamNsys(t *testing.T) {
	path := filepath.Join("..", "..", "shared", "data", "nsys", "mfu_2gpu_after.sqlite")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s is absent (the sample exports live outside the project): %v", path, err)
	}
	want, err := nsys.ReadFiles([]string{path}, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got Collect
	batches := 0
	res, err := Stream([]string{path}, Options{Writer: "w"}, sinkFuncs{&got, func() { batches++ }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Format != FormatNsys || res.Importer != "nsys" || res.Events != len(want.Events) || !reflect.DeepEqual(got.All, want.Events) {
		t.Fatalf("format %v (%s), %d events; want an export of %d", res.Format, res.Importer, res.Events, len(want.Events))
	}
	if m := got.Header.Meta; m.Devices != want.Devices || m.EpochUnixNs != want.EpochUnixNs || m.Writer != "w" || m.Backend != "nsys" {
		t.Errorf("meta %+v: want %d devices from epoch %d", m, want.Devices, want.EpochUnixNs)
	}
	if batches < (len(want.Events)+recordings.DefaultBatch-1)/recordings.DefaultBatch {
		t.Errorf("%d batches for %d events: batches larger than a recording's", batches, len(want.Events))
	}
	stop := errors.New("sink full")
	if _, err := Stream([]string{path}, Options{}, failing{stop}); !errors.Is(err, stop) {
		t.Errorf("%v, want the sink's error", err)
	}
}

// TestStreamInspector: a directory of NCCL Inspector logs is told as one and streamed in start
// order, as its importer reads it.
func TestStreamInspector(t *testing.T) {
	dir := filepath.Join("inspector", "testdata", "v2.32")
	if f, err := Detect(dir); f != FormatInspector || err != nil {
		t.Fatalf("Detect(%s) = %v, %v; want %v", dir, f, err, FormatInspector)
	}
	var got Collect
	res, err := Stream([]string{dir}, Options{Writer: "w"}, &got)
	if err != nil {
		t.Fatal(err)
	}
	if res.Format != FormatInspector || res.Importer != "nccl-inspector" || res.Events != 6 || len(got.All) != 6 {
		t.Fatalf("format %v (%s), %d events; want an Inspector import of 6", res.Format, res.Importer, res.Events)
	}
	if m := got.Header.Meta; m.Devices != 2 || m.Backend != "nccl-inspector" || m.Writer != "w" {
		t.Errorf("meta %+v: want 2 devices from nccl-inspector", m)
	}
	if len(res.Warnings) == 0 {
		t.Errorf("no warnings; want the dump's losses and the proxy records left out")
	}
}

// TestExportedMetaRoundTrip: the description a Chrome export carries (recordings.MetaPairs under
// xfertopMetadata) is read back whole; where an export lacks a key, the import's own finding
// stands. Only the writer is the importing program's.
func TestExportedMetaRoundTrip(t *testing.T) {
	rec, err := recordings.ReadFile(sample, recordings.Options{})
	if err != nil {
		t.Fatal(err)
	}
	full := timeline.Meta{Source: "sim", Scenario: "pipeline", Knobs: map[string]string{"compute": "21ms", "d2d_priority": "high"},
		Backend: "sim", Topology: "h100x8x2", Devices: 16, GPUsPerHost: 8, LinkPeaks: [timeline.NumPeaks]float64{55e9, 450e9, 50e9, 1.512e12},
		Seed: 7, IdleMode: timeline.IdleEngine, KernelWaitNs: 25_000, EpochUnixNs: 1_795_413_997_204_135_809, Writer: "xfertop 0.0",
		Mapping: "rank r on GPU r mod 4", Extra: map[string]string{"gpu.0": "H100"}, Faults: []string{"kind=gpu_slow,host=1,gpu=2,factor=0.5,at=1s"}}
	tests := []struct {
		name  string
		pairs map[string]string
		want  func(path string) timeline.Meta
	}{
		{"every field", pairsOf(full), func(string) timeline.Meta { m := full; m.Writer = "w"; return m }},
		{"an export that says only its scenario", map[string]string{"scenario": "overlap"}, func(path string) timeline.Meta {
			return timeline.Meta{Source: path, Scenario: "overlap", Backend: "xfertop-chrome", Topology: "unknown", Devices: 8,
				KernelWaitNs: 30_000, EpochUnixNs: 0, Writer: "w"}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "export.json")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := chrome.Write(f, rec.Events, rec.Strings, tc.pairs); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			var got Collect
			if _, err := Stream([]string{path}, Options{Writer: "w"}, &got); err != nil {
				t.Fatal(err)
			}
			if want := tc.want(path); !reflect.DeepEqual(got.Header.Meta, want) {
				t.Errorf("imported description\n%+v\nwant\n%+v", got.Header.Meta, want)
			}
		})
	}
}

// pairsOf is m as an export's xfertopMetadata holds it.
func pairsOf(m timeline.Meta) map[string]string {
	out := map[string]string{}
	for _, kv := range recordings.MetaPairs(m) {
		out[kv[0]] = kv[1]
	}
	return out
}

// TestStreamFlightRecorder: a directory of Flight Recorder dumps is told as one and streamed as
// its importer reads it; a dump file alone is told by its content.
func TestStreamFlightRecorder(t *testing.T) {
	dir := filepath.Join("flightrecorder", "testdata", "hang")
	for _, p := range []string{dir, filepath.Join(dir, "nccl_trace_rank_2")} {
		if f, err := Detect(p); f != FormatFlightRecorder || err != nil {
			t.Fatalf("Detect(%s) = %v, %v; want %v", p, f, err, FormatFlightRecorder)
		}
	}
	var got Collect
	res, err := Stream([]string{dir}, Options{Writer: "w"}, &got)
	if err != nil {
		t.Fatal(err)
	}
	if res.Format != FormatFlightRecorder || res.Importer != "flight-recorder" || res.Events != 27 || len(got.All) != 27 {
		t.Fatalf("format %v (%s), %d events; want a Flight Recorder import of 27", res.Format, res.Importer, res.Events)
	}
	if m := got.Header.Meta; m.Devices != 4 || m.Backend != "flight-recorder" || m.Extra["comm.1"] == "" {
		t.Errorf("meta %+v: want 4 devices from flight-recorder, its process groups named", m)
	}
}

// TestMaxInputBytesSizes: --max-input-bytes, when given, refuses an Nsight Systems export or an
// xfertop recording larger than it (their readers seek, so the bound is the size on disk), naming
// the file, its size and the flag, for Stream and Read alike; one at the bound goes on.
func TestMaxInputBytesSizes(t *testing.T) {
	dir := t.TempDir()
	sqlite := filepath.Join(dir, "x.sqlite")
	if err := os.WriteFile(sqlite, append([]byte(sqliteMagic), make([]byte, 84)...), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join("..", "recordings", "testdata", "v1-pipeline.xfr")
	fi, err := os.Stat(rec)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path string
		max        int64
		want       string // "" when the size passes (the reader may still fail on the content)
	}{
		{"export over", sqlite, 99, "x.sqlite: 100 bytes, more than --max-input-bytes (99): an Nsight Systems"},
		{"export at", sqlite, 100, ""},
		{"recording over", rec, fi.Size() - 1, "v1-pipeline.xfr: " + strconv.FormatInt(fi.Size(), 10) + " bytes, more than --max-input-bytes"},
		{"recording unbounded", rec, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Stream([]string{c.path}, Options{MaxWholeFileBytes: c.max}, &Collect{})
			if c.want == "" {
				if err != nil && strings.Contains(err.Error(), "--max-input-bytes") {
					t.Fatalf("Stream = %v; want no size refusal", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Stream = %v; want an error containing %q", err, c.want)
			}
		})
	}
	if _, err := Read([]string{sqlite}, Options{MaxWholeFileBytes: 99}); err == nil || !strings.Contains(err.Error(), "more than --max-input-bytes (99)") {
		t.Errorf("Read = %v; want the export refused by size", err)
	}
}
