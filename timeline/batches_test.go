package timeline

import (
	"testing"
	"time"
)

// A consumer that cannot keep up: the producer never waits; every event is either delivered or
// counted as dropped, the count arrives with a later batch, and no string is lost.
func TestBatchesSlowConsumer(t *testing.T) {
	src := NewStrings()
	b := NewBatches(src, 10, 1, time.Hour, nil)
	delivered, carried := 0, int64(0)
	seen := map[uint32]string{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for x := range b.C() {
			time.Sleep(2 * time.Millisecond)
			delivered += len(x.Events)
			carried += x.Dropped
			for i, s := range x.Strings {
				seen[x.First+uint32(i)] = s
			}
			b.Release(x)
		}
	}()
	const n = 5000
	begin := time.Now()
	for i := range n {
		e := Event{Op: uint64(i)}
		if i%100 == 0 {
			e.Label = src.ID(string(rune('A' + i/100)))
		}
		b.Emit(&e)
	}
	if d := time.Since(begin); d > 200*time.Millisecond {
		t.Logf("emitting took %v (the consumer sleeps 2 ms a batch: waiting would take 1 s)", d)
	}
	b.Close()
	<-done
	if b.Dropped() == 0 || int64(delivered)+b.Dropped() != n || carried != b.Dropped() {
		t.Errorf("delivered %d, dropped %d (carried %d); want delivered + dropped = %d and drops carried", delivered, b.Dropped(), carried, n)
	}
	for id := uint32(1); id < uint32(src.Len()); id++ {
		if seen[id] != src.Lookup(id) {
			t.Fatalf("string %d = %q; want %q", id, seen[id], src.Lookup(id))
		}
	}
}

// Partial batches go out on the flush interval; keep selects what is carried.
func TestBatchesFlushAndKeep(t *testing.T) {
	b := NewBatches(nil, 1000, 4, 10*time.Millisecond, func(e *Event) bool { return e.Kind == KindSend })
	b.Emit(&Event{Kind: KindKernel})
	b.Emit(&Event{Kind: KindSend, Op: 1})
	select {
	case x := <-b.C():
		if len(x.Events) != 1 || x.Events[0].Op != 1 {
			t.Errorf("batch %+v", x.Events)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the partial batch was not flushed")
	}
	if !b.Close() || b.Close() {
		t.Error("Close must succeed once")
	}
}

// Blocking: the same slow consumer receives every event in order, and nothing is dropped.
func TestBatchesBlocking(t *testing.T) {
	b := NewBatches(nil, 10, 1, time.Hour, nil)
	b.SetBlocking(true)
	var got []uint64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for x := range b.C() {
			time.Sleep(100 * time.Microsecond)
			for _, e := range x.Events {
				got = append(got, e.Op)
			}
			b.Release(x)
		}
	}()
	const n = 2000
	for i := range n {
		b.Emit(&Event{Op: uint64(i)})
	}
	b.Close()
	<-done
	if b.Dropped() != 0 || len(got) != n {
		t.Fatalf("delivered %d, dropped %d; want all %d", len(got), b.Dropped(), n)
	}
	for i, op := range got {
		if op != uint64(i) {
			t.Fatalf("event %d has op %d: out of order", i, op)
		}
	}
}
