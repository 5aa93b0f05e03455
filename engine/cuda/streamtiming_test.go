//go:build cuda

package cuda

import (
	"context"
	"testing"
	"time"

	"gorgonia.org/cu"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/timeline"
)

// An op queued behind unfinished work on its stream goes without a start event and is reported from
// the end of the op before it; an op queued after a wait for another stream records its own start,
// since it may start later than that. Against the fake driver or a GPU.
func TestStreamTimingFollows(t *testing.T) {
	if n, err := cu.NumDevices(); err != nil || n < 1 {
		t.Skipf("needs a GPU (or the fake driver): %v", err)
	}
	store := timeline.NewStore(nil)
	b, err := New(Config{Topology: engine.Topology{Name: "t", Hosts: 1, GPUsPerHost: 1}, Fit: engine.Fit{Ranks: 1, GPUs: 1}}, store, store.Strings)
	if err != nil {
		t.Fatal(err)
	}
	c := engine.NewClient(b, store, engine.DefaultOptions())
	a := c.ComputeStream(0)
	other, err := c.NewStream(0, engine.PriorityNormal)
	if err != nil {
		t.Fatal(err)
	}
	const busyFor, produceFor = 40 * time.Millisecond, 80 * time.Millisecond
	must(t, c.Kernel(a, busyFor.Nanoseconds(), "busy"))
	var copies []*engine.Future
	for range 4 { // queued while the kernel runs: each follows the op before it
		f, err := c.Copy(a, timeline.CopyD2D, 1<<20, -1, false)
		must(t, err)
		copies = append(copies, f)
	}
	must(t, c.Kernel(other, produceFor.Nanoseconds(), "producer"))
	ev, err := c.Record(other)
	must(t, err)
	must(t, c.WaitEvent(a, ev))
	after, err := c.Copy(a, timeline.CopyD2D, 1<<20, -1, false)
	must(t, err)
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var kernels, memcpys []timeline.Event
	for _, e := range store.Events() {
		switch e.Kind {
		case timeline.KindKernel:
			kernels = append(kernels, e)
		case timeline.KindMemcpy:
			memcpys = append(memcpys, e)
		}
	}
	if len(kernels) != 2 || len(memcpys) != 5 {
		t.Fatalf("%d kernels and %d copies; want 2 and 5", len(kernels), len(memcpys))
	}
	busy := kernels[0]
	if busy.Stream != uint32(a) {
		busy = kernels[1]
	}
	prevEnd := busy.End
	for i, f := range copies {
		e := memcpys[i]
		if e.Op != f.Op() {
			t.Fatalf("copy %d reported as op %d; want %d (in stream order)", i, e.Op, f.Op())
		}
		if e.Start != prevEnd {
			t.Errorf("copy %d starts at %d; want the end of the op before it on its stream, %d", i, e.Start, prevEnd)
		}
		prevEnd = e.End
	}
	// The producer on the other stream ends after this stream's copies: the copy queued after the
	// wait for it starts then, not when the copy before it ended.
	producer := kernels[0]
	if producer.Stream != uint32(other) {
		producer = kernels[1]
	}
	if last := memcpys[4]; last.Op != after.Op() || last.Start < producer.End {
		t.Errorf("the copy after the wait (op %d) starts at %d, before the event it waited for (the producer's end, %d)", last.Op, last.Start, producer.End)
	}
	if got := b.followed.Load(); got < 3 {
		t.Errorf("%d ops went without a start event; want the copies queued behind the kernel (at least 3 of 4)", got)
	}
}
