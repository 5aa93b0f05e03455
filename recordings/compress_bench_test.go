package recordings_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"testing"

	"github.com/xfertop/xfertop/importers/chrome"
	"github.com/xfertop/xfertop/importers/kineto"
	"github.com/xfertop/xfertop/session"
	"github.com/xfertop/xfertop/timeline"
)

// Run with: go test ./recordings -run '^$' -bench Sweep -benchtime 3x -cpu 1
// (the setup simulates 1,000 steps, ~2.4 M events, once).

// countWriter counts the bytes written through it.
type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// BenchmarkSweep compares, in one run, the ways of storing 1,000 steps of allreduce-sweep: .xfr
// with zstd (the default), .xfr uncompressed (format version 1), and gzipped Chrome trace JSON
// (what `xfertop convert` writes, gzipped as one would to ship it). Each reports B/event and
// events/s; reading is on one core (zstd decodes with concurrency 1).
func BenchmarkSweep(b *testing.B) {
	st := timeline.NewStore(nil)
	p, err := session.Prepare(session.Config{Scenario: "allreduce-sweep", Steps: 1000}, st)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := p.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	evs, strs := st.Events(), p.Strings()
	for _, c := range codecs {
		b.Run("write/xfr-"+c.name, func(b *testing.B) { benchWrite(b, evs, c.opts) })
	}
	b.Run("write/chrome-json-gzip", func(b *testing.B) {
		var size int64
		defer reportCPU(b, len(evs), processCPU())
		for b.Loop() {
			var cw countWriter
			gz := gzip.NewWriter(&cw)
			if err := chrome.Write(gz, evs, strs, nil); err != nil {
				b.Fatal(err)
			}
			if err := gz.Close(); err != nil {
				b.Fatal(err)
			}
			size = cw.n
		}
		b.ReportMetric(float64(len(evs))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		b.ReportMetric(float64(size)/float64(len(evs)), "B/event")
	})
	for _, c := range codecs {
		data := encode(b, evs, strs, c.opts...)
		b.Run("read/xfr-"+c.name, func(b *testing.B) { benchReadStream(b, data, len(evs)) })
	}
	// Reading the JSON back with xfertop's own importer, on the first 100,000 events: the whole
	// run would be ~800 MB of JSON held in memory.
	part := evs[:min(len(evs), 100_000)]
	var js bytes.Buffer
	gz := gzip.NewWriter(&js)
	if err := chrome.Write(gz, part, strs, nil); err != nil {
		b.Fatal(err)
	}
	_ = gz.Close()
	b.Run("read/chrome-json-gzip", func(b *testing.B) {
		defer reportCPU(b, len(part), processCPU())
		for b.Loop() {
			zr, err := gzip.NewReader(bytes.NewReader(js.Bytes()))
			if err != nil {
				b.Fatal(err)
			}
			im, err := kineto.Import("sweep.json", zr, kineto.Options{})
			if err != nil || len(im.Events) == 0 {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(part))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
}
