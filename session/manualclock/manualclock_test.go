package manualclock

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A timer fires only once the clock has moved past it; a stopped one never fires and no longer
// counts as a sleeper; Step returns once the woken sleeper sleeps again.
func TestClock(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := New(time.Unix(100, 0))
	ch, _ := c.Timer(30 * time.Millisecond)
	if c.Advance(20*time.Millisecond) || len(ch) != 0 {
		t.Fatal("a timer fired before its time")
	}
	if !c.Advance(10*time.Millisecond) || len(ch) != 1 || !(<-ch).Equal(time.Unix(100, 30e6)) {
		t.Fatal("a timer did not fire at its time")
	}
	_, stop := c.Timer(time.Second)
	stop()
	if c.Sleepers() != 0 || c.Advance(2*time.Second) {
		t.Fatal("a stopped timer still sleeps or fires")
	}
	// A sleeper that sleeps again each time it wakes, three times.
	done := make(chan struct{})
	s0 := c.Seq()
	go func() {
		defer close(done)
		for range 3 {
			ch, _ := c.Timer(10 * time.Millisecond)
			<-ch
		}
	}()
	if err := c.WaitSleeper(ctx, s0); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		seq := c.Seq()
		if err := c.Step(ctx, 10*time.Millisecond); err != nil || c.Seq() <= seq {
			t.Fatalf("Step returned before the sleeper slept again: %v", err)
		}
	}
	c.Advance(10 * time.Millisecond)
	<-done
}
