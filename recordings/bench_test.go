package recordings_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"testing"
	"time"

	"github.com/xfertop/xfertop/importers/chrome"
	"github.com/xfertop/xfertop/importers/kineto"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/session"
	"github.com/xfertop/xfertop/timeline"
)

// Run with: go test ./recordings -run '^$' -bench . -cpu 1 (compare runs with benchstat).

// overlapEvents runs the overlap scenario: a realistic mix of kernels, collectives, groups and waits.
func overlapEvents(b *testing.B, steps int) ([]timeline.Event, *timeline.Strings) {
	st := timeline.NewStore(nil)
	p, err := session.Prepare(session.Config{Scenario: "overlap", Steps: steps}, st)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := p.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	return st.Events(), p.Strings()
}

func encode(b *testing.B, evs []timeline.Event, strs *timeline.Strings, opts ...recordings.WriterOption) []byte {
	var buf bytes.Buffer
	w, err := recordings.NewWriter("bench", &buf, opts...)
	if err != nil {
		b.Fatal(err)
	}
	if err := w.WriteStrings(1, strs.All()[1:]); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < len(evs); i += recordings.DefaultBatch {
		if err := w.WriteEvents(evs[i:min(i+recordings.DefaultBatch, len(evs))]); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// reportCPU reports events per CPU-second of the process since cpu0 (when the system measures it):
// on a shared machine, the wall-clock events/s also counts the time spent waiting for a core.
func reportCPU(b *testing.B, events int, cpu0 time.Duration) {
	if cpu := processCPU() - cpu0; cpu0 > 0 && cpu > 0 {
		b.ReportMetric(float64(events)*float64(b.N)/cpu.Seconds(), "events/cpu-s")
	}
}

// codecs are the two ways of writing events: zstd-compressed (the default) and the version 1 layout.
var codecs = []struct {
	name string
	opts []recordings.WriterOption
}{{"zstd", nil}, {"raw", []recordings.WriterOption{recordings.WithoutCompression()}}}

// BenchmarkWrite encodes and frames events and reports the size.
func BenchmarkWrite(b *testing.B) {
	evs, _ := overlapEvents(b, 30)
	for _, c := range codecs {
		b.Run(c.name, func(b *testing.B) { benchWrite(b, evs, c.opts) })
	}
}

func benchWrite(b *testing.B, evs []timeline.Event, opts []recordings.WriterOption) {
	var size int64
	b.ReportAllocs()
	defer reportCPU(b, len(evs), processCPU())
	for b.Loop() {
		w, _ := recordings.NewWriter("bench", io.Discard, opts...)
		for i := 0; i < len(evs); i += recordings.DefaultBatch {
			if err := w.WriteEvents(evs[i:min(i+recordings.DefaultBatch, len(evs))]); err != nil {
				b.Fatal(err)
			}
		}
		_ = w.Close()
		size = w.Offset()
	}
	b.ReportMetric(float64(len(evs))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(size)/float64(len(evs)), "B/event")
}

// BenchmarkRead decodes a recording held in memory into a new slice (goal ≥ 20 M events/s on one core).
func BenchmarkRead(b *testing.B) {
	evs, strs := overlapEvents(b, 30)
	for _, c := range codecs {
		data := encode(b, evs, strs, c.opts...)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rec, err := recordings.ReadAll("bench", data, recordings.Options{})
				if err != nil || len(rec.Events) != len(evs) {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(evs))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkChromeJSON is the baseline in the same run: the same events as Chrome trace JSON, written
// by xfertop's exporter and decoded by encoding/json (into the generic form a JSON tool reads).
// Compare its B/event and events/s with BenchmarkWrite and BenchmarkRead.
func BenchmarkChromeJSON(b *testing.B) {
	evs, strs := overlapEvents(b, 30)
	var buf bytes.Buffer
	if err := chrome.Write(&buf, evs, strs, nil); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			if err := chrome.Write(io.Discard, evs, strs, nil); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(evs))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		b.ReportMetric(float64(len(data))/float64(len(evs)), "B/event")
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var v struct {
				TraceEvents []map[string]any `json:"traceEvents"`
			}
			if err := json.Unmarshal(data, &v); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(evs))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
}

// BenchmarkKinetoImport imports the real ResNet-50 trace (uncompressed bytes; goal ≥ 100 MB/s).
func BenchmarkKinetoImport(b *testing.B) {
	path := "../../shared/data/kineto/resnet50_v100_worker0.pt.trace.json.gz"
	f, err := os.Open(path)
	if err != nil {
		b.Skipf("real traces not available: %v", err)
	}
	defer f.Close()
	raw := gunzip(b, f)
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := kineto.Import("resnet50.json", bytes.NewReader(raw), kineto.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadStream decodes chunk by chunk into one reused buffer (Next/At), as replay does.
func BenchmarkReadStream(b *testing.B) {
	evs, strs := overlapEvents(b, 30)
	for _, c := range codecs {
		data := encode(b, evs, strs, c.opts...)
		b.Run(c.name, func(b *testing.B) { benchReadStream(b, data, len(evs)) })
	}
}

func benchReadStream(b *testing.B, data []byte, events int) {
	b.ReportAllocs()
	defer reportCPU(b, events, processCPU())
	for b.Loop() {
		r, err := recordings.NewReader("bench", bytes.NewReader(data), int64(len(data)), recordings.Options{})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for r.Next() {
			n += len(r.At())
		}
		if n != events {
			b.Fatal(r.Err())
		}
		_ = r.Close()
	}
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(len(data))/float64(events), "B/event")
}
