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
