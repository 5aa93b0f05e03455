package timeline

import (
	"sync"
	"testing"
)

// A producer appends while a reader takes snapshots: every snapshot is a consistent prefix, labels
// resolve, and the window stays bounded, counting what it trimmed. Run with -race.
func TestWindowConcurrent(t *testing.T) {
	src := NewStrings()
	w := NewWindow(3*windowChunk, src)
	const n = 10 * windowChunk
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range n {
			e := Event{Start: int64(i), End: int64(i) + 1, Op: uint64(i)}
			if i%1000 == 0 {
				e.Label = src.ID("label " + string(rune('a'+i/1000%26)))
			}
			w.Emit(&e)
		}
	}()
	for done := false; !done; {
		s := w.Snapshot()
		done = s.Total == n
		prev := int64(-1)
		for i := s.Base; i < s.Total; i++ {
			e := s.At(i)
			if int64(e.Op) != i {
				t.Fatalf("event at global index %d has op %d", i, e.Op)
			}
			if int64(e.Op) <= prev {
				t.Fatal("not in order")
			}
			prev = int64(e.Op)
			if e.Label != 0 && s.Label(e.Label) == "" {
				t.Fatalf("label %d of event %d does not resolve", e.Label, i)
			}
		}
		if s.Len() > 4*windowChunk {
			t.Fatalf("window holds %d events; limit %d", s.Len(), 3*windowChunk)
		}
		if s.Base != s.Trimmed {
			t.Fatalf("base %d != trimmed %d", s.Base, s.Trimmed)
		}
	}
	wg.Wait()
	s := w.Snapshot()
	if s.Trimmed == 0 || s.Now != n {
		t.Errorf("trimmed %d now %d", s.Trimmed, s.Now)
	}
	w.Reset()
	if s := w.Snapshot(); s.Len() != 0 || s.Total != n {
		t.Errorf("after reset: %d held, total %d", s.Len(), s.Total)
	}
	e := Event{Op: 7}
	w.Emit(&e)
	if s := w.Snapshot(); s.Len() != 1 || s.At(s.Base).Op != 7 {
		t.Errorf("after reset and emit: %+v", s)
	}
}

// The console's automatic window grows with the job's GPUs (a minute of llm-train's events for
// each), from DefaultWindow up to the memory budget: 2 GiB, or a quarter of the machine's memory.
func TestAutoWindow(t *testing.T) {
	const gib = 1 << 30
	most := WindowBudget / HeldEventBytes
	for _, c := range []struct {
		devices int
		ram     uint64
		want    int
	}{
		{0, 0, DefaultWindow}, // an attach that has seen no job yet
		{1, 0, DefaultWindow}, // a minute of one GPU is less than the floor
		{8, 64 * gib, 8 * EventsPerGPUSecond * AutoWindowSeconds},   // 1.6 M
		{32, 64 * gib, 32 * EventsPerGPUSecond * AutoWindowSeconds}, // 6.5 M
		{1024, 64 * gib, most}, // the 2 GiB budget, not 12 GiB of events
		{1024, 0, most},        // memory unknown: the budget
		{1024, 4 * gib, gib / HeldEventBytes},
		{1024, 1 << 28, DefaultWindow}, // a quarter of a small machine is below the floor: the floor
		{1 << 40, 64 * gib, most},      // no overflow
	} {
		if got := AutoWindow(c.devices, c.ram); got != c.want {
			t.Errorf("AutoWindow(%d, %d) = %d; want %d", c.devices, c.ram, got, c.want)
		}
	}
	// The 1,024-GPU run of the user trial (1.7 M events in 1.55 s) is held whole.
	if got := AutoWindow(1024, 24*gib); got < 1_706_512 {
		t.Errorf("AutoWindow(1024, 24 GiB) = %d; the trial's 1,706,512 events would be trimmed", got)
	}
}

// A listener sizes its window when the sender's job is known: a smaller limit trims from then on.
func TestWindowSetLimit(t *testing.T) {
	w := NewWindow(4*windowChunk, nil)
	for i := range 4 * windowChunk {
		w.Emit(&Event{Kind: KindKernel, Start: int64(i), End: int64(i + 1)})
	}
	w.SetLimit(windowChunk)
	for i := range windowChunk + 1 {
		w.Emit(&Event{Kind: KindKernel, Start: int64(i), End: int64(i + 1)})
	}
	s := w.Snapshot()
	if w.Limit() != windowChunk || s.Len() > 2*windowChunk || s.Trimmed == 0 {
		t.Errorf("after SetLimit(%d): limit %d, %d held, %d trimmed", windowChunk, w.Limit(), s.Len(), s.Trimmed)
	}
}

// A snapshot kept while the window moves on lets go of the chunks the window trims and keeps the
// rest, the window's own arrays; the list of chunks it was taken with is not written; a snapshot of
// another generation changes nothing.
func TestSnapshotHeldBy(t *testing.T) {
	w := NewWindow(2*windowChunk, nil) // two chunks
	emit := func(n int) {
		for range n {
			w.Emit(&Event{Kind: KindKernel, Device: 0, Stream: 1})
		}
	}
	emit(windowChunk + 100)
	kept := w.Snapshot()
	chunks := len(kept.Chunks)
	trimmedSome := false
	for _, more := range []int{0, windowChunk, windowChunk, 4 * windowChunk} {
		emit(more)
		live := w.Snapshot()
		got := kept.HeldBy(&live)
		wantBase := min(max(kept.Base, live.Base), kept.Total)
		if got.Base != wantBase || got.Total != kept.Total || got.Trimmed-kept.Trimmed != got.Base-kept.Base {
			t.Errorf("window from %d: kept from %d to %d, trimmed %d; want from %d to %d", live.Base, got.Base, got.Total, got.Trimmed, wantBase, kept.Total)
		}
		trimmedSome = trimmedSome || (got.Base > kept.Base && got.Len() > 0)
		for i := got.Base; i < got.Total; i++ {
			if got.At(i) != live.At(i) {
				t.Fatalf("event %d: not the window's own", i)
			}
		}
		if len(kept.Chunks) != chunks || kept.Chunks[0] == nil {
			t.Fatal("the snapshot's own list of chunks was written")
		}
	}
	if got := kept.HeldBy(new(w.Snapshot())); got.Len() != 0 || !trimmedSome {
		t.Errorf("past the window: %d held; a part let go on the way: %v", got.Len(), trimmedSome)
	}
	other := w.Snapshot()
	other.Generation++
	if got := kept.HeldBy(&other); got.Base != kept.Base || len(got.Chunks) != chunks {
		t.Errorf("another generation's snapshot let go of chunks: base %d, %d chunks", got.Base, len(got.Chunks))
	}
}
