package nsys_test

import (
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xfertop/xfertop/importers/kineto"
	"github.com/xfertop/xfertop/importers/nsys"
	"github.com/xfertop/xfertop/importers/nsys/nsystest"
	"github.com/xfertop/xfertop/timeline"
)

// largeExport writes nsystest.WriteLarge's export of n kernels stored in blocks of block rows.
func largeExport(t testing.TB, path string, n, block int) {
	t.Helper()
	if err := nsystest.WriteLarge(path, n, block); err != nil {
		t.Fatal(err)
	}
}

// peakSink keeps no events: it checks their order, counts them, and samples the heap after each
// batch for its peak (garbage not yet collected included), and with gcEvery set, after a
// collection every gcEvery batches, for the peak of the live heap.
type peakSink struct {
	start              time.Time
	first              time.Duration // from start to the first batch
	events, outOfOrder int
	last               int64
	peakHeap, peakLive uint64
	gcEvery, batches   int
	sample             []metrics.Sample
}

func newPeakSink() *peakSink {
	return &peakSink{sample: []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}}
}

func (p *peakSink) begin(*kineto.Imported) error { return nil }

func (p *peakSink) emit(evs []timeline.Event) error {
	if p.events == 0 {
		p.first = time.Since(p.start)
	}
	for i := range evs {
		if evs[i].Start < p.last {
			p.outOfOrder++
		}
		p.last = evs[i].Start
	}
	p.events += len(evs)
	metrics.Read(p.sample)
	p.peakHeap = max(p.peakHeap, p.sample[0].Value.Uint64())
	if p.batches++; p.gcEvery > 0 && p.batches%p.gcEvery == 0 {
		runtime.GC()
		metrics.Read(p.sample)
		p.peakLive = max(p.peakLive, p.sample[0].Value.Uint64())
	}
	return nil
}

// resetPeakRSS starts a new peak of the resident set (Linux: VmHWM is reset by writing 5 to
// clear_refs); false where that is not possible.
func resetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// peakRSS is the process's peak resident set in bytes since the last reset, or 0.
func peakRSS() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// importPeak imports path into a peakSink (collecting every gcEvery batches when above 0), after a
// collection so that the peak is the import's; sqlSurvey has the survey read with SQL alone.
func importPeak(t testing.TB, path string, gcEvery int, sqlSurvey bool) (*peakSink, uint64) {
	return importPeakAs(t, path, gcEvery, sqlSurvey, nsys.StreamSurveyed)
}

// importPeakAs is importPeak importing with stream.
func importPeakAs(t testing.TB, path string, gcEvery int, sqlSurvey bool,
	stream func([]string, nsys.Options, bool, func(*kineto.Imported) error, func([]timeline.Event) error) (*kineto.Imported, int, error)) (*peakSink, uint64) {
	t.Helper()
	runtime.GC()
	rss := resetPeakRSS()
	sink := newPeakSink()
	sink.gcEvery = gcEvery
	sink.start = time.Now()
	if _, _, err := stream([]string{path}, nsys.Options{}, sqlSurvey, sink.begin, sink.emit); err != nil {
		t.Fatal(err)
	}
	if sink.outOfOrder > 0 {
		t.Fatalf("%d events out of start order", sink.outOfOrder)
	}
	if !rss {
		return sink, 0
	}
	return sink, peakRSS()
}

// largeRows is how many rows largeExport writes for n kernels.
func largeRows(n int) int { return nsystest.LargeRows(n) }

// TestStartOrder: whatever the order in which an export stores its rows (in start order, a little
// out of it, within the reorder buffer, or far out of it, read sorted by SQLite), the events come
// out in start order, the same events in the same order, each kernel with its launch time.
func TestStartOrder(t *testing.T) {
	const n = 1 << 15
	// Events with their labels as strings: labels are numbered in the order names are first met.
	type named struct {
		ev    timeline.Event
		label string
	}
	var want []named
	for _, block := range []int{1, 64, n} {
		path := fmt.Sprintf("%s/block%d.sqlite", t.TempDir(), block)
		largeExport(t, path, n, block)
		im, err := nsys.ReadFiles([]string{path}, nsys.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(im.Events) != largeRows(n) || len(im.Warnings) > 0 {
			t.Fatalf("block %d: %d events, want %d; warnings %v", block, len(im.Events), largeRows(n), im.Warnings)
		}
		for i, e := range im.Events {
			if i > 0 && e.Start < im.Events[i-1].Start {
				t.Fatalf("block %d: event %d starts before the one before it", block, i)
			}
			if (e.Kind == timeline.KindKernel || e.Kind == timeline.KindCollective) && e.Queued != e.Start-1500 {
				t.Fatalf("block %d: kernel %+v: launched at %d, want 1.5 µs before it starts", block, e, e.Queued)
			}
		}
		got := make([]named, len(im.Events))
		for i, e := range im.Events {
			l := im.Strings.Lookup(e.Label)
			e.Label = 0
			got[i] = named{e, l}
		}
		if want == nil {
			want = got
		} else if !slices.Equal(got, want) {
			t.Fatalf("block %d: events differ from those of an export stored in start order", block)
		}
	}
}

// TestMemoryFlat: the heap an import needs does not grow with the export: ten times the rows, about
// the same peak of live heap, sampled after a collection every 16 batches (an import that held its
// events would need ten times the memory). Both exports are read through caches (the smaller one
// would be read whole, out of the heap: at most 16 MiB, whatever its rows). The figures for 1 and
// 13 million kernels are BenchmarkImportLarge's.
func TestMemoryFlat(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("writes exports of 0.27 and 2.7 million rows (not under -short or -race)")
	}
	dir := t.TempDir()
	var peak [2]uint64
	for i, n := range []int{128_000, 1_280_000} {
		path := fmt.Sprintf("%s/k%d.sqlite", dir, n)
		largeExport(t, path, n, 64)
		sink, _ := importPeakAs(t, path, 16, false, nsys.StreamCached)
		if sink.events != largeRows(n) {
			t.Fatalf("%d kernels: %d events, want %d", n, sink.events, largeRows(n))
		}
		peak[i] = sink.peakLive
		os.Remove(path)
	}
	t.Logf("peak live heap: %.1f MiB for 0.27 M rows, %.1f MiB for 2.7 M", float64(peak[0])/(1<<20), float64(peak[1])/(1<<20))
	if float64(peak[1]) > 1.25*float64(peak[0]) {
		t.Fatalf("the live heap grows with the export: %d bytes for 10 times the rows of %d", peak[1], peak[0])
	}
}

// BenchmarkImportLarge measures rows read per second, how soon the first events are handed on
// (first-events-s: after the survey) and how long the whole import takes (import-s), and the peak
// heap and resident set of streaming an export of 128,000 and 1,280,000 kernels (0.27 and 2.7
// million rows), or of the numbers of kernels listed in XFERTOP_NSYS_LARGE (10000000 writes an
// export of about 1 GB); survey=pages is the importer's (the survey and the events from the tables'
// pages), survey=sql the import with SQL alone (as it was before it read tables from their pages),
// one after the other on the same export:
//
//	XFERTOP_NSYS_LARGE=1000000,10000000 go test -run XXX -bench ImportLarge -benchtime 1x -cpu 1 ./importers/nsys/
func BenchmarkImportLarge(b *testing.B) {
	sizes := []int{128_000, 1_280_000}
	if env := os.Getenv("XFERTOP_NSYS_LARGE"); env != "" {
		sizes = sizes[:0]
		for f := range strings.SplitSeq(env, ",") {
			n, err := strconv.Atoi(f)
			if err != nil || n <= 0 {
				b.Fatalf("XFERTOP_NSYS_LARGE: %q is not a number of kernels", f)
			}
			sizes = append(sizes, n)
		}
	}
	dir := b.TempDir()
	for _, n := range sizes {
		path := fmt.Sprintf("%s/k%d.sqlite", dir, n)
		largeExport(b, path, n, 64)
		st, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		for _, survey := range []string{"sql", "pages"} {
			b.Run(fmt.Sprintf("kernels=%d/survey=%s", n, survey), func(b *testing.B) {
				var heap, rss uint64
				var first, all time.Duration
				b.ResetTimer()
				cpu0 := cpuTime()
				for b.Loop() {
					start := time.Now()
					sink, r := importPeak(b, path, 0, survey == "sql")
					all += time.Since(start)
					first += sink.first
					heap, rss = max(heap, sink.peakHeap), max(rss, r)
				}
				reportRows(b, int64(largeRows(n)), cpu0)
				b.ReportMetric(first.Seconds()/float64(b.N), "first-events-s")
				b.ReportMetric(all.Seconds()/float64(b.N), "import-s")
				b.ReportMetric(float64(st.Size())/(1<<20), "file-MiB")
				b.ReportMetric(float64(heap)/(1<<20), "peak-heap-MiB")
				if rss > 0 {
					b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MiB")
				}
			})
		}
		os.Remove(path)
	}
}
