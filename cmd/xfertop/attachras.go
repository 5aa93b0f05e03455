package main

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/xfertop/xfertop/importers/ras"
	"github.com/xfertop/xfertop/timeline"
)

// rasCommBase numbers the communicators RAS reports apart from the ranks' own.
const rasCommBase = 1 << 20

// rasMux puts a RAS poller's events into attach's stream. The attach server emits from its merge
// goroutine, with labels of its own table (which that goroutine owns); the poller emits from its
// own. The mux is the sinks' one door: both go through its lock, and it interns every label in
// the sinks' table (which only it writes while the job runs).
type rasMux struct {
	mu     sync.Mutex
	sinks  []timeline.Sink
	strs   *timeline.Strings // the sinks' table
	server *timeline.Strings // the attach server's table
	cache  []uint32          // server label id → sinks' id (0: not yet)
}

// Emit takes one of the attach server's events (on its merge goroutine).
func (m *rasMux) Emit(e *timeline.Event) {
	ev := *e
	m.mu.Lock()
	defer m.mu.Unlock()
	if id := ev.Label; id != 0 {
		if int(id) >= len(m.cache) {
			m.cache = append(m.cache, make([]uint32, int(id)+1-len(m.cache))...)
		}
		if m.cache[id] == 0 {
			m.cache[id] = m.strs.ID(m.server.Lookup(id)) // the merge goroutine owns server: read here only
		}
		ev.Label = m.cache[id]
	}
	for _, k := range m.sinks {
		k.Emit(&ev)
	}
}

// inject takes a poll's events, labelled in the poller's table (read on the poller's goroutine).
func (m *rasMux) inject(evs []timeline.Event, labels *timeline.Strings) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range evs {
		ev := evs[i]
		ev.Label = m.strs.ID(labels.Lookup(ev.Label))
		for _, k := range m.sinks {
			k.Emit(&ev)
		}
	}
}

// startRAS polls the job's RAS at addr into mux until the returned stop is called. stop waits for
// the first poll to have ended, so that a job shorter than a poll is still asked once, unless
// ctx ended; then for the poller to end, so that nothing is emitted after it.
func startRAS(ctx context.Context, addr string, every time.Duration, epoch int64, mux *rasMux) (stop func()) {
	pctx, cancel := context.WithCancel(ctx)
	first := make(chan struct{})
	var once sync.Once
	p := &ras.Poller{Addr: addr, Interval: every, Epoch: epoch, CommBase: rasCommBase,
		Polled: func(error) { once.Do(func() { close(first) }) }}
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(pctx, func(evs []timeline.Event) { mux.inject(evs, p.Strings) })
	}()
	return func() {
		select {
		case <-first:
		case <-ctx.Done():
		}
		cancel()
		<-done
	}
}

// checkRASAddr checks --ras is HOST:PORT.
func checkRASAddr(addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("--ras %q: want HOST:PORT, e.g. %s (NCCL_RAS_ADDR): %v", addr, ras.DefaultAddr, err)
	}
	return nil
}
