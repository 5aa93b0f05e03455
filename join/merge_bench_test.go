package join

import (
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// BenchmarkMergeRecordings merges 8 ranks' recordings of 100,000 collectives each: events merged
// per second, bytes allocated per event, and the heap in use at the end of a merge (what memory
// bounded by the blocks, not the files, means).
//
//	go test -run XXX -bench MergeRecordings -benchtime 5x ./join
func BenchmarkMergeRecordings(b *testing.B) {
	const ranks, per = 8, 100_000
	dir := b.TempDir()
	var paths []string
	for r := range ranks {
		p := filepath.Join(dir, "rank"+strconv.Itoa(r)+".xfr")
		w, err := recordings.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		_ = w.WriteMeta(recordings.Meta{Backend: "nccl", EpochUnixNs: 1e18 + int64(r)*1000,
			Extra: map[string]string{"nccl.host": "h", "nccl.pid": strconv.Itoa(r), "nccl.rank": strconv.Itoa(r)}})
		batch := make([]timeline.Event, 0, recordings.DefaultBatch)
		for i := range per {
			t := int64(i) * 10_000
			batch = append(batch, timeline.Event{Kind: timeline.KindCollective, Start: t, End: t + 5000, Device: int32(r), Peer: -1,
				Comm: 9, Stream: 1, Bytes: 1 << 20, Op: uint64(i + 1), Ranks: ranks, Queued: -1})
			if len(batch) == cap(batch) {
				if err := w.WriteEvents(batch); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
		if err := w.WriteEvents(batch); err != nil {
			b.Fatal(err)
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, p)
	}
	b.ReportAllocs()
	events := 0
	var heap uint64
	for b.Loop() {
		m, err := MergeRecordings(paths, recordings.Options{})
		if err != nil {
			b.Fatal(err)
		}
		for m.Next() {
			events += len(m.At())
		}
		if err := m.Err(); err != nil {
			b.Fatal(err)
		}
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		heap = max(heap, ms.HeapInuse)
		m.Close()
	}
	if events != b.N*ranks*per {
		b.Fatalf("merged %d events, want %d", events, b.N*ranks*per)
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(heap)/(1<<20), "MiB-heap-in-use")
}
