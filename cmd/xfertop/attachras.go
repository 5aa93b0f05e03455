package main

import (
	"context"
	"fmt"
	"io"
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

// NameHost hands the sinks that take them the name of a host a rank named (timeline.HostNamer).
func (m *rasMux) NameHost(h int32, name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range m.sinks {
		if n, ok := k.(timeline.HostNamer); ok {
			n.NameHost(h, name)
		}
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

// rasState is how the polls of the job's RAS went: an unreachable RAS must be said, or its
// silence ("Findings: none") reads as a healthy job.
type rasState struct {
	addr string
	// warn is told once when a poll fails after none had, or after one had succeeded (from the
	// poller's goroutine).
	warn func(string)

	mu            sync.Mutex
	polls, failed int
	lastErr       string
	down          bool // the latest poll failed
}

// polled notes one poll's outcome.
func (r *rasState) polled(err error) {
	r.mu.Lock()
	r.polls++
	wasDown := r.down
	r.down = err != nil
	if err != nil {
		r.failed++
		r.lastErr = rasErrText(err)
	}
	msg := r.problemLocked()
	r.mu.Unlock()
	if err != nil && !wasDown && r.warn != nil {
		r.warn(msg)
	}
}

// Problem says that RAS could not be reached, and what that leaves unknown; "" when every poll
// reached it (or none has ended yet).
func (r *rasState) Problem() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.problemLocked()
}

func (r *rasState) problemLocked() string {
	if r.failed == 0 {
		return ""
	}
	return fmt.Sprintf("NCCL RAS at %s could not be reached (%d of %d polls failed; last: %s): the dead, missing and stuck ranks it tells are unknown, so no finding from it is no sign of health",
		r.addr, r.failed, r.polls, r.lastErr)
}

// startRAS polls the job's RAS at addr into mux until the returned stop is called. stop waits for
// the first poll to have ended, so that a job shorter than a poll is still asked once, unless
// ctx ended; then for the poller to end, so that nothing is emitted after it. state counts the
// polls and tells its warn of an unreachable RAS.
func startRAS(ctx context.Context, addr string, every time.Duration, epoch int64, mux *rasMux, state *rasState) (stop func()) {
	pctx, cancel := context.WithCancel(ctx)
	first := make(chan struct{})
	var once sync.Once
	p := &ras.Poller{Addr: addr, Interval: every, Epoch: epoch, CommBase: rasCommBase,
		Polled: func(err error) {
			if pctx.Err() == nil { // a poll cut short by the end of the job is no failure of RAS
				state.polled(err)
			}
			once.Do(func() { close(first) })
		}}
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

// lockedWriter serialises writes from several goroutines to one writer (stderr, which a test may
// give as a bytes.Buffer).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// rasQuoteMax is how many bytes of a peer's answer a warning quotes (ras.QuoteMax).
const rasQuoteMax = ras.QuoteMax

// rasErrText is a poll's error for the user (ras.ErrText): an answer that is not NCCL RAS's is
// quoted only by its first bytes, with its length.
func rasErrText(err error) string { return ras.ErrText(err) }
