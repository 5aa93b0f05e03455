package sim_test

import (
	"context"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/timeline"
)

// InFlight reports an op while it runs, with the start it is reported with when it ends and End
// the time it was seen running; once it has ended (or before it runs) it is not reported.
func TestInFlight(t *testing.T) {
	const ms = 1_000_000
	tests := []struct {
		name string
		// queue queues the work on a fresh client and returns the stream the op watched runs on.
		queue func(t *testing.T, c *engine.Client) engine.StreamID
		at    int64         // ns after the work was queued
		want  timeline.Kind // KindNone: nothing running on the stream
		final timeline.Kind // the kind of the reported event whose start the running op must have
	}{
		{"kernel running", kernel(2*ms, 1), ms, timeline.KindKernel, timeline.KindKernel},
		{"kernel ended", kernel(2*ms, 1), 3 * ms, timeline.KindNone, 0},
		{"kernel not launched yet", kernel(2*ms, 1), 0, timeline.KindNone, 0},
		{"kernel with one queued behind it", kernel(2*ms, 2), ms, timeline.KindKernel, timeline.KindKernel},
		{"the kernel queued behind, once the first ended", kernel(2*ms, 2), 3 * ms, timeline.KindKernel, timeline.KindKernel},
		{"copy running", func(t *testing.T, c *engine.Client) engine.StreamID {
			s := c.TransferStream(0)
			if _, err := c.Copy(s, timeline.CopyH2D, 1<<30, -1, false); err != nil { // ~20 ms at 55 GB/s
				t.Fatal(err)
			}
			return s
		}, 5 * ms, timeline.KindMemcpy, timeline.KindMemcpy},
		{"send waiting for its receiver", sendLate, ms, timeline.KindPeerWait, timeline.KindPeerWait},
		{"send moving data", sendLate, 2*ms + 500_000, timeline.KindSend, timeline.KindSend},
		{"event wait", func(t *testing.T, c *engine.Client) engine.StreamID {
			if err := c.Kernel(c.ComputeStream(0), 2*ms, "producer"); err != nil {
				t.Fatal(err)
			}
			ev, _ := c.Record(c.ComputeStream(0))
			s := c.TransferStream(0)
			if err := c.WaitEvent(s, ev); err != nil {
				t.Fatal(err)
			}
			return s
		}, ms, timeline.KindEventWait, timeline.KindEventWait},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, store := newClient(t, "h100x8", engine.DefaultOptions())
			warm(t, c, []engine.DeviceID{0, 1})
			t0 := c.Backend().Now()
			stream := tt.queue(t, c)
			s := c.Backend().(*sim.Sim)
			if err := sim.RunUntil(s, t0+tt.at); err != nil {
				t.Fatal(err)
			}
			var got *timeline.Event
			evs := s.InFlight(nil)
			for i := range evs {
				if evs[i].Stream == uint32(stream) {
					if got != nil {
						t.Fatalf("two ops running on stream %d: %+v", stream, evs)
					}
					got = &evs[i]
				}
			}
			if tt.want == timeline.KindNone {
				if got != nil {
					t.Fatalf("at %d ns: %+v running; want nothing", tt.at, *got)
				}
				return
			}
			if got == nil {
				t.Fatalf("at %d ns: nothing running on stream %d (in flight: %+v); want a %v", tt.at, stream, evs, tt.want)
			}
			if got.Kind != tt.want || got.End != s.Now() || got.Start > got.End {
				t.Errorf("running = %+v; want a %v from its start to now (%d)", *got, tt.want, s.Now())
			}
			run(t, c)
			if left := s.InFlight(nil); len(left) != 0 {
				t.Errorf("after the run: %+v still running", left)
			}
			for _, e := range store.Events() {
				if e.Stream == uint32(stream) && e.Kind == tt.final && e.Start == got.Start {
					if e.End < got.End {
						t.Errorf("it ended at %d, before it was seen running at %d", e.End, got.End)
					}
					return
				}
			}
			t.Errorf("no %v on stream %d reported with the running op's start %d: %+v", tt.final, stream, got.Start, store.Events())
		})
	}
}

// kernel queues n kernels of dur ns on device 0's compute stream: one runs at a time, the others
// wait on the stream and are not running.
func kernel(dur int64, n int) func(t *testing.T, c *engine.Client) engine.StreamID {
	return func(t *testing.T, c *engine.Client) engine.StreamID {
		s := c.ComputeStream(0)
		for range n {
			if err := c.Kernel(s, dur, "k"); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
}

// sendLate posts a 4 GiB send from device 0 whose receiver posts 2 ms later.
func sendLate(t *testing.T, c *engine.Client) engine.StreamID {
	s0, s1 := c.TransferStream(0), c.TransferStream(1)
	if err := c.Kernel(c.ComputeStream(1), 2_000_000, "late"); err != nil {
		t.Fatal(err)
	}
	ev, _ := c.Record(c.ComputeStream(1))
	_ = c.WaitEvent(s1, ev)
	if _, err := c.Send(s0, 1, 4<<30, 42); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Recv(s1, 0, 4<<30, 42); err != nil {
		t.Fatal(err)
	}
	return s0
}

// InFlight does not allocate once its buffer has room: the console calls it every frame.
func BenchmarkInFlight(b *testing.B) {
	c, _ := newClient(b, "h100x8", engine.DefaultOptions())
	for d := range engine.DeviceID(8) {
		for range 4 {
			if err := c.Kernel(c.ComputeStream(d), 10_000_000, "k"); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := c.Copy(c.TransferStream(d), timeline.CopyH2D, 1<<30, -1, false); err != nil {
			b.Fatal(err)
		}
	}
	s := c.Backend().(*sim.Sim)
	if err := sim.RunUntil(s, 5_000_000); err != nil {
		b.Fatal(err)
	}
	dst := s.InFlight(nil)
	if len(dst) != 16 {
		b.Fatalf("%d ops running; want 16 (a kernel and a copy per GPU)", len(dst))
	}
	b.ReportAllocs()
	for b.Loop() {
		dst = s.InFlight(dst[:0])
	}
	b.ReportMetric(float64(len(dst)), "ops")
	_ = c.Run(context.Background())
}

// A run nobody watches publishes what is in flight only when Run returns (each publication reads
// every op slot); once InFlight has been called, it publishes as it goes.
func TestPublishesOnlyOnceWatched(t *testing.T) {
	c, _ := newClient(t, "h100x8", engine.DefaultOptions())
	s := c.Backend().(*sim.Sim)
	work := func() {
		for range 4096 {
			if err := c.Kernel(c.ComputeStream(0), 1000, "k"); err != nil {
				t.Fatal(err)
			}
		}
		run(t, c)
	}
	work()
	if n := sim.Publications(s); n != 1 {
		t.Fatalf("unwatched: %d publications over a run of 4,096 kernels; want 1, when Run returned", n)
	}
	s.InFlight(nil)
	work()
	if n := sim.Publications(s); n < 4 {
		t.Fatalf("watched: %d publications in all; want the first run's one, some as the second ran and one as it returned", n)
	}
}
