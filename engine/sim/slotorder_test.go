package sim

import (
	"context"
	"reflect"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/topology"
	"github.com/xfertop/xfertop/timeline"
)

// slotStep issues one step on h100x8's eight GPUs whose ops end in another order than they are
// issued (kernels longer on higher devices, after them a send, a receive and an all-reduce, with
// futures, ranks and sizes in their slots, and a ragged all-to-all).
func slotStep(t *testing.T, c *engine.Client, devs []engine.DeviceID) {
	t.Helper()
	for i, d := range devs {
		if err := c.Kernel(c.ComputeStream(d), int64(i+1)*1_000_000, "k"); err != nil {
			t.Fatal(err)
		}
	}
	id := c.NewOpID()
	if _, err := c.Send(c.TransferStream(0), 1, 1<<20, id); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Recv(c.TransferStream(1), 0, 1<<20, id); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Collective(timeline.CollAllReduce, devs, 1<<24, "ar"); err != nil {
		t.Fatal(err)
	}
	sizes := [][]int64{{0, 1 << 10, 2 << 10, 3 << 10}, {4 << 10, 0, 5 << 10, 6 << 10}, {7 << 10, 8 << 10, 0, 9 << 10}, {1 << 10, 2 << 10, 3 << 10, 0}}
	if _, err := c.RaggedAllToAll(devs[:4], sizes, "a2a"); err != nil {
		t.Fatal(err)
	}
}

// shape is what a step's event is, apart from its time in the session and its ids.
type shape struct {
	kind               timeline.Kind
	device, peer       int32
	stream             uint32
	bytes, start, dur  int64
	status, sub, ranks uint64
}

// shapes are evs' shapes, but for the links' bytes, whose windows are cut at fixed times of the
// session (timeline.KindLinkBytes), not of the step.
func shapes(evs []timeline.Event, t0 int64) []shape {
	out := make([]shape, 0, len(evs))
	for _, e := range evs {
		if e.Kind == timeline.KindLinkBytes {
			continue
		}
		out = append(out, shape{e.Kind, e.Device, e.Peer, e.Stream, e.Bytes, e.Start - t0, e.End - e.Start,
			uint64(e.Status), uint64(e.Sub), uint64(e.Ranks)})
	}
	return out
}

// Between steps the op slots are handed out again in ascending order (orderFreeSlots), and a
// reused slot carries nothing of its earlier op: after a step every slot is clear (no future,
// ranks or sizes kept alive, no flag left set), the next step takes slots 0, 1, 2, … in turn, and
// that step, the same ops again, runs exactly as the one before did.
func TestFreeSlotsClearAndInOrderAfterStep(t *testing.T) {
	tp, err := topology.Builtin("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	m := ModelOf(tp)
	m.KernelJitter = 0
	store := timeline.NewStore(nil)
	s, err := New(Config{Topology: tp, Seed: 1, Model: m}, store, store.Strings)
	if err != nil {
		t.Fatal(err)
	}
	c := engine.NewClient(s, store, engine.DefaultOptions())
	devs := []engine.DeviceID{0, 1, 2, 3, 4, 5, 6, 7}
	// A first step creates the communicators and the collectives' memory, which the next ones reuse.
	slotStep(t, c, devs)
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var steps [2][]shape
	for i := range steps {
		t0, from := s.Now(), store.Len()
		slotStep(t, c, devs)
		if err := c.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		steps[i] = shapes(store.Events()[from:], t0)
		if len(s.freeOps) != s.nOps || s.nOps == 0 {
			t.Fatalf("step %d: %d of %d slots free after the step; want all", i, len(s.freeOps), s.nOps)
		}
		for oi := range int32(s.nOps) {
			if o := s.op(oi); !reflect.DeepEqual(*o, opState{}) {
				t.Errorf("step %d: free slot %d holds %+v; want it clear", i, oi, *o)
			}
		}
		if i == 0 {
			// The order in which the next step takes the slots (then given back as they were).
			saved := append([]int32(nil), s.freeOps...)
			gens := append([]uint32(nil), s.gens...)
			for want := range int32(s.nOps) {
				if got := s.takeSlot(); got != want {
					t.Fatalf("after the step, slot %d taken %d-th; want slot %d (ascending)", got, want, want)
				}
			}
			s.freeOps, s.gens = saved, gens
		}
	}
	if len(steps[0]) == 0 || !reflect.DeepEqual(steps[0], steps[1]) {
		t.Errorf("the second step, on reused slots, differs from the first:\n%v\n%v", steps[0], steps[1])
	}
}

// A stream's queue runs through its ops' slots (stream, opState.next): ops queued on a stream are
// chained head to tail in the order queued, the head running, and they run in that order, each
// starting when the one before it ends; the queue is empty once they have, and a stream queued
// on again afterwards starts a new chain.
func TestStreamQueueInSlots(t *testing.T) {
	tp, err := topology.Builtin("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	m := ModelOf(tp)
	m.KernelJitter = 0
	store := timeline.NewStore(nil)
	s, err := New(Config{Topology: tp, Seed: 1, Model: m}, store, store.Strings)
	if err != nil {
		t.Fatal(err)
	}
	c := engine.NewClient(s, store, engine.DefaultOptions())
	sid := c.ComputeStream(3)
	for round := range 2 {
		var ois []int32
		for i := range 3 {
			op := engine.StreamOp{Kind: engine.OpKernel, Stream: sid, Device: 3, Peer: -1, Duration: int64(i+1) * 1000}
			oi := s.reserve(&op)
			s.enqueue(oi)
			ois = append(ois, oi)
		}
		st := &s.streams[sid]
		if st.first != ois[0] || st.last != ois[2] || st.running != ois[0] {
			t.Fatalf("round %d: queue head %d, tail %d, running %d; want %d, %d, %d", round, st.first, st.last, st.running, ois[0], ois[2], ois[0])
		}
		for i, oi := range ois {
			want := int32(-1)
			if i+1 < len(ois) {
				want = ois[i+1]
			}
			if got := s.op(oi).next; got != want {
				t.Fatalf("round %d: slot %d's next is %d; want %d", round, oi, got, want)
			}
		}
		from := store.Len()
		if err := c.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if st := &s.streams[sid]; st.first != -1 || st.last != -1 || st.running != -1 {
			t.Fatalf("round %d: after the run the queue is head %d, tail %d, running %d; want all -1", round, st.first, st.last, st.running)
		}
		var ks []timeline.Event
		for _, e := range store.Events()[from:] {
			if e.Kind == timeline.KindKernel && e.Stream == uint32(sid) {
				ks = append(ks, e)
			}
		}
		if len(ks) != 3 {
			t.Fatalf("round %d: %d kernels on the stream; want 3", round, len(ks))
		}
		for i, e := range ks {
			if d := e.End - e.Start; d != int64(i+1)*1000 {
				t.Errorf("round %d: kernel %d ran %d ns; want %d (the queue's order)", round, i, d, (i+1)*1000)
			}
			if i > 0 && e.Start != ks[i-1].End {
				t.Errorf("round %d: kernel %d starts at %d; want %d, when the one before ended", round, i, e.Start, ks[i-1].End)
			}
		}
	}
}
