package session

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// A live run at the highest ingest the simulator produces (unpaced) keeps memory bounded: the
// window trims old events and says how many; the heap stays flat once it is full.
func TestLiveMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator flat out for two seconds")
	}
	l, err := StartLive(context.Background(), Config{Scenario: "overlap", Steps: 1 << 30, Window: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	time.Sleep(700 * time.Millisecond)
	early := heap()
	time.Sleep(1500 * time.Millisecond)
	late := heap()
	snap := l.Snapshot()
	if _, err := l.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d events emitted, %d held, %d trimmed; heap %d MB then %d MB", snap.Total, snap.Len(), snap.Trimmed, early>>20, late>>20)
	if snap.Trimmed == 0 || snap.Len() > 100_000+16_384 {
		t.Errorf("window holds %d events and trimmed %d; want ≤ ~100 000 held and trimming", snap.Len(), snap.Trimmed)
	}
	if late > early+early/2+16<<20 {
		t.Errorf("heap grew from %d MB to %d MB while the window was full", early>>20, late>>20)
	}
}
