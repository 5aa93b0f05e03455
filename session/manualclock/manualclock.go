package manualclock

import (
	"context"
	"sync"
	"time"
)

// Clock is a manual clock. Its zero value is not usable: call New.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	seq     uint64 // timers made so far
	timers  []*timer
	changed chan struct{} // closed when a timer is made or stopped
}

type timer struct {
	at  time.Time
	seq uint64
	ch  chan time.Time
}

// New returns a clock at t.
func New(t time.Time) *Clock { return &Clock{now: t, changed: make(chan struct{})} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Timer returns a channel that receives the clock's time once it has moved d on, and the function
// that stops the timer (a sleeper that woke for something else).
func (c *Clock) Timer(d time.Duration) (<-chan time.Time, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{at: c.now.Add(d), ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.ch <- c.now
		return t.ch, func() {}
	}
	c.seq++
	t.seq = c.seq
	c.timers = append(c.timers, t)
	c.notify()
	return t.ch, func() { c.stop(t) }
}

func (c *Clock) stop(t *timer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.timers {
		if x == t {
			c.timers = append(c.timers[:i], c.timers[i+1:]...)
			c.notify()
			return
		}
	}
}

// Sleepers returns how many timers are pending.
func (c *Clock) Sleepers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Seq returns how many timers have been made: WaitSleeper waits for one made after.
func (c *Clock) Seq() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seq
}

// Advance moves the clock on by d and fires every timer whose time has come; it reports whether
// any did.
func (c *Clock) Advance(d time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	keep := c.timers[:0]
	fired := false
	for _, t := range c.timers {
		if t.at.After(c.now) {
			keep = append(keep, t)
			continue
		}
		t.ch <- c.now
		fired = true
	}
	clear(c.timers[len(keep):])
	c.timers = keep
	c.notify()
	return fired
}

// Step moves the clock on by d and, when that woke a sleeper, waits until one sleeps again (ctx
// bounds the wait): what the sleeper does at the new time is then done.
func (c *Clock) Step(ctx context.Context, d time.Duration) error {
	s := c.Seq()
	if !c.Advance(d) {
		return nil
	}
	return c.WaitSleeper(ctx, s)
}

// WaitSleeper waits until a timer made after the seq-th one is pending, or ctx is done.
func (c *Clock) WaitSleeper(ctx context.Context, seq uint64) error {
	for {
		c.mu.Lock()
		found := false
		for _, t := range c.timers {
			found = found || t.seq > seq
		}
		ch := c.changed
		c.mu.Unlock()
		if found {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

// notify wakes WaitSleeper. Called with mu held.
func (c *Clock) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}
