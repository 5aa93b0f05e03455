package whatif

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/xfertop/xfertop/importers"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/whatif/synth"
)

// planSink is a first pass over a trace, as the command makes it.
type planSink struct{ p Plan }

func (s *planSink) Begin(*importers.Header) error   { return nil }
func (s *planSink) Events(b []timeline.Event) error { s.p.Events(b); return nil }

// streamSink is the second pass: the trace into a Stream, built when its header comes.
type streamSink struct {
	s      *Stream
	params StreamParams
	o      Options
}

func (s *streamSink) Begin(h *importers.Header) error {
	s.s = NewStream(h.Strings, s.o, s.params, Outputs{})
	return nil
}
func (s *streamSink) Events(b []timeline.Event) error { return s.s.Events(b) }

// heapPeak samples the heap in use, and the live heap as the last GC marked it, until stopped,
// and keeps the most it saw of each.
type heapPeak struct {
	stop chan struct{}
	done sync.WaitGroup
	peak uint64
	live uint64
}

func watchHeap() *heapPeak {
	h := &heapPeak{stop: make(chan struct{})}
	h.done.Add(1)
	go func() {
		defer h.done.Done()
		// runtime/metrics, not ReadMemStats: it does not stop the world.
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}, {Name: "/gc/heap/live:bytes"}}
		for {
			metrics.Read(sample)
			h.peak = max(h.peak, sample[0].Value.Uint64()+sample[1].Value.Uint64())
			h.live = max(h.live, sample[2].Value.Uint64())
			select {
			case <-h.stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return h
}

func (h *heapPeak) end() (peak, live uint64) {
	close(h.stop)
	h.done.Wait()
	return h.peak, h.live
}

// BenchmarkStreamMemory replays synthetic PyTorch profiler traces of steps of one shape (one rank,
// 400 kernels a step, and two ranks of 200), 10, 100 and 1000 of them, as the command does (a first pass for the steps,
// then a step at a time), with every kernel halved; it reports the peak heap in use (objects
// and the unused parts of their spans: HeapInuse, sampled every 5 ms) and the most the GC found
// live, while replaying, and while the first pass imports the trace and keeps nothing of it
// (the importer's own) and the trace's MB read per second of both passes. Memory bounded by a step: the
// peak stays flat as the steps grow a hundredfold.
//
//	go test ./whatif -run '^$' -bench StreamMemory -benchtime 1x
func BenchmarkStreamMemory(b *testing.B) {
	for _, rs := range [][2]int{{1, 10}, {1, 100}, {1, 1000}, {2, 10}, {2, 100}, {2, 1000}} {
		b.Run(fmt.Sprintf("ranks=%d/steps=%d", rs[0], rs[1]), func(b *testing.B) {
			dir := b.TempDir()
			sh := synth.Shape{Ranks: rs[0], Steps: rs[1], Ops: 400 / rs[0], Seed: 1}
			var paths []string
			var ws []io.Writer
			var size int64
			for r := range sh.Ranks {
				p := filepath.Join(dir, fmt.Sprintf("rank-%d.json", r))
				f, err := os.Create(p)
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				paths, ws = append(paths, p), append(ws, f)
			}
			if err := synth.Write(ws, sh); err != nil {
				b.Fatal(err)
			}
			for _, p := range paths {
				st, err := os.Stat(p)
				if err != nil {
					b.Fatal(err)
				}
				size += st.Size()
			}
			o := Options{Scale: map[string]float64{"*": 0.5}}
			var peak, live, importPeak, importLive uint64
			b.ResetTimer()
			for b.Loop() {
				runtime.GC()
				h := watchHeap()
				var first planSink
				if _, err := importers.Stream(paths, importers.Options{}, &first); err != nil {
					b.Fatal(err)
				}
				p, l := h.end()
				importPeak, importLive = max(importPeak, p), max(importLive, l)
				runtime.GC()
				h = watchHeap()
				second := &streamSink{params: first.p.Params(), o: o}
				if _, err := importers.Stream(paths, importers.Options{}, second); err != nil {
					b.Fatal(err)
				}
				if _, err := second.s.Close(); err != nil {
					b.Fatal(err)
				}
				p, l = h.end()
				peak, live = max(peak, p), max(live, l)
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
			b.ReportMetric(float64(importPeak)/(1<<20), "import-peak-MB")
			b.ReportMetric(float64(live)/(1<<20), "live-MB")
			b.ReportMetric(float64(importLive)/(1<<20), "import-live-MB")
			b.ReportMetric(float64(size)/(1<<20), "trace-MB")
			b.ReportMetric(float64(size)/(1<<20)*float64(b.N)/b.Elapsed().Seconds(), "MB/s")
		})
	}
}
