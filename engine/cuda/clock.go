//go:build cuda

package cuda

import (
	"fmt"
	"math"
	"time"

	"gorgonia.org/cu"
)

// A GPU's timestamps reach the host only as differences between two of its events, in float32
// milliseconds (cuEventElapsedTime). Measured from one session start event, an op an hour in would
// be rounded to 0.25 ms. So each GPU keeps a chain of anchors: events recorded about once a second
// whose session time is the previous anchor's plus the (short, precise) time between them; an op is
// timed from the last anchor recorded before it was launched.

// defaultAnchorEvery is how often a new anchor is recorded on each GPU (Config.AnchorEvery).
const defaultAnchorEvery = time.Second

// anchorsKept bounds each GPU's chain; an op launched before the oldest anchor kept (it ran longer
// than the watchdog allows, by then) is timed from that one.
const anchorsKept = 16

type anchor struct {
	ev   cu.Event
	ns   int64         // session time of the event, in GPU 0's frame
	host time.Duration // when the host saw it reached, since the session start
}

// clock is one GPU's chain of anchors.
type clock struct {
	anchors []anchor // complete, oldest first
	pending *anchor  // recorded, not yet reached by the GPU
}

// alignClocks puts every GPU's time 0 in GPU 0's frame: GPU 0 records an event, GPU g's null stream
// waits for it and records its own; the two happen within the latency of a cross-GPU wait (a few
// microseconds), so GPU g's time of its event is GPU 0's time of the other. Without this, each
// GPU's time 0 would be when the host got round to recording it, tens of microseconds apart.
func (b *Backend) alignClocks() error {
	g0 := b.gpus[0]
	for i, g := range b.gpus {
		g.clock.anchors = []anchor{{ev: g.start}}
		if err := cu.SetCurrentContext(g.ctx); err != nil {
			return err
		}
		// Reached before any op is launched, so no op's time can come out before time 0.
		if err := g.start.Synchronize(); err != nil {
			return err
		}
		if i == 0 {
			continue
		}
		best := math.Inf(-1)
		for range 5 {
			off, err := offset(g0, g)
			if err != nil {
				return fmt.Errorf("GPU %d against GPU 0: %w", i, err)
			}
			best = max(best, off)
		}
		g.clock.anchors[0].ns = int64(best * 1e6)
	}
	return nil
}

// offset measures, in ms, what to add to g's times to put them in g0's frame. The measure falls
// short by the cross-GPU wait's latency, never over, so the largest of a few tries is the best.
func offset(g0, g *gpu) (float64, error) {
	if err := cu.SetCurrentContext(g0.ctx); err != nil {
		return 0, err
	}
	mark, err := g0.timing.take()
	if err != nil {
		return 0, err
	}
	defer g0.timing.give(mark)
	if err := mark.Record(cu.Stream{}); err != nil {
		return 0, err
	}
	if err := cu.SetCurrentContext(g.ctx); err != nil {
		return 0, err
	}
	seen, err := g.timing.take()
	if err != nil {
		return 0, err
	}
	defer g.timing.give(seen)
	if err := (cu.Stream{}).Wait(mark, 0); err != nil {
		return 0, err
	}
	if err := seen.Record(cu.Stream{}); err != nil {
		return 0, err
	}
	if err := seen.Synchronize(); err != nil {
		return 0, err
	}
	local, err := g.start.Elapsed(seen)
	if err != nil {
		return 0, err
	}
	if err := cu.SetCurrentContext(g0.ctx); err != nil {
		return 0, err
	}
	ref, err := g0.start.Elapsed(mark)
	if err != nil {
		return 0, err
	}
	return float64(ref) - float64(local), nil
}

// tick records a new anchor on GPU g when the last is Config.AnchorEvery old, and completes a
// pending one the GPU has reached. Called by the poller, with g's context current.
func (b *Backend) tick(g int, now time.Duration) {
	c := &b.gpus[g].clock
	last := c.anchors[len(c.anchors)-1]
	if c.pending != nil {
		if c.pending.ev.Query() != nil {
			return // not reached yet (or failed: retried at the next tick)
		}
		ms, err := last.ev.Elapsed(c.pending.ev)
		if err != nil {
			return
		}
		// Ops launched from now on run after the anchor: seen reached, it is behind them all.
		c.pending.ns, c.pending.host = last.ns+int64(float64(ms)*1e6), now
		c.anchors = append(c.anchors, *c.pending)
		c.pending = nil
		if len(c.anchors) > anchorsKept {
			b.gpus[g].timing.give(c.anchors[0].ev)
			c.anchors = c.anchors[1:]
		}
		return
	}
	if now-last.host < b.anchorEvery {
		return
	}
	ev, err := b.gpus[g].timing.take()
	if err != nil {
		return
	}
	if err := ev.Record(cu.Stream{}); err != nil {
		b.gpus[g].timing.give(ev)
		return
	}
	c.pending = &anchor{ev: ev}
}

// gpuTime converts an event of an op launched at queued (host time) to ns since the session start.
func (b *Backend) gpuTime(g int, ev cu.Event, queued time.Duration) int64 {
	c := &b.gpus[g].clock
	a := c.anchors[0]
	for _, x := range c.anchors[1:] {
		if x.host <= queued {
			a = x
		}
	}
	ms, err := a.ev.Elapsed(ev)
	if err != nil {
		return time.Since(b.wall0).Nanoseconds()
	}
	return a.ns + int64(float64(ms)*1e6)
}
