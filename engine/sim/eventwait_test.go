package sim_test

import (
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/timeline"
)

// Every event wait is reported, the one whose event was recorded before its stream reached it as
// an instant: it is the stream's dependency on the record all the same. Stream b waits for a's
// record twice: once before a's 100 µs kernel ends (it waits), once after its own
// 300 µs kernel, when the event has long been recorded (it does not wait). Unreported, the second
// was no dependency to a what-if in which b ran faster.
func TestEventWaitReportedWhenItDidNotWait(t *testing.T) {
	s, store := h100x8(t)
	c := engine.NewClient(s, store, engine.DefaultOptions())
	a, _ := c.NewStream(0, engine.PriorityNormal)
	b, _ := c.NewStream(0, engine.PriorityNormal)
	if err := c.Kernel(a, 100_000, "produce"); err != nil {
		t.Fatal(err)
	}
	ev, err := c.Record(a)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{c.WaitEvent(b, ev), c.Kernel(b, 300_000, "consume"), c.WaitEvent(b, ev), c.Kernel(b, 10_000, "again")} {
		if err != nil {
			t.Fatal(err)
		}
	}
	run(t, c)
	var waits []timeline.Event
	for _, e := range store.Events() {
		if e.Kind == timeline.KindEventWait {
			waits = append(waits, e)
		}
	}
	if len(waits) != 2 {
		t.Fatalf("%d event waits reported; want 2: %+v", len(waits), waits)
	}
	if w := waits[0]; w.Dur() <= 0 || w.Aux != uint32(ev) {
		t.Errorf("the first wait lasted %d ns for event %d; want it to wait, for event %d", w.Dur(), w.Aux, ev)
	}
	if w := waits[1]; w.Dur() != 0 || w.Aux != uint32(ev) || w.Start < waits[0].End+300_000 {
		t.Errorf("the second wait: %d..%d for event %d; want an instant after the 300 µs kernel (from %d), for event %d", w.Start, w.End, w.Aux, waits[0].End+300_000, ev)
	}
}
