package session

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// A live run at the highest ingest the simulator produces (unpaced) keeps memory bounded: the
// window trims old events and says how many; the heap stays flat once it is full.
func TestLiveMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator flat out for 600 000 events")
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
	// Measured by events, not by time, so that a loaded machine only makes it slower: the first
	// heap reading once the window is full, the second after as many events again.
	waitFor := func(n int64) {
		for deadline := time.Now().Add(2 * time.Minute); l.Snapshot().Total < n && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor(200_000)
	early := heap()
	waitFor(600_000)
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

// Stopping a live run (q in the console) is a normal end: the outcome and the recording say
// nothing ended early.
func TestStopIsANormalEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stopped.xfr")
	l, err := StartLive(context.Background(), Config{Scenario: "pipeline", Steps: 1 << 20, Speed: 1, Record: path})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	out, err := l.Stop()
	if err != nil || out.Ended != nil || l.Err() != nil {
		t.Fatalf("stopped run: outcome %+v, err %v, Err %v; want a normal end", out, err, l.Err())
	}
	rp, err := Replay(context.Background(), ReplayConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if e := rp.Outcome["ended"]; e != "" {
		t.Errorf("the recording says the run ended early: %q", e)
	}
}
