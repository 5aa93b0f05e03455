package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/xfertop/xfertop/timeline"
)

// A live run that simulates slower than the speed asked for says so in the header, from the
// frames' simulated and wall-clock times; one that keeps up, a finished one, and one with under a
// second of frames do not.
func TestHeaderShowsAchievedRate(t *testing.T) {
	for _, c := range []struct {
		name    string
		simStep int64 // simulated ns per 100 ms of wall clock
		frames  int
		done    bool
		want    string
	}{
		{name: "behind", simStep: 12_000_000, frames: 30, want: "speed 1× (running at 0.12×)"},
		{name: "far behind", simStep: 1_400_000, frames: 30, want: "speed 1× (running at 0.014×)"},
		// A factor of 2.9e-06 is said as simulated time per second, not in scientific notation.
		{name: "cluster scale", simStep: 290, frames: 30, want: "speed 1× (running at 2.90 µs simulated per second)"},
		{name: "keeping up", simStep: 100_000_000, frames: 30, want: "speed 1×  "},
		{name: "too soon to tell", simStep: 12_000_000, frames: 5, want: "speed 1×  "},
		{name: "done", simStep: 12_000_000, frames: 30, done: true, want: "speed 1×  "},
	} {
		win := timeline.NewWindow(1<<16, timeline.NewStrings())
		src := &fakeSource{win: win, info: SourceInfo{Name: "live", Meta: timeline.Meta{Devices: 1, GPUsPerHost: 1}}, status: Status{Speed: 1}}
		m := sized(src, 160, 40)
		wall := time.Unix(1000, 0)
		m.clock = func() time.Time { return wall }
		for i := range c.frames {
			e := timeline.Event{Kind: timeline.KindKernel, Device: 0, Peer: -1, Stream: 1, Start: int64(i) * c.simStep, End: int64(i+1) * c.simStep, Queued: -1}
			win.Emit(&e)
			wall = wall.Add(100 * time.Millisecond)
			m.refresh()
		}
		if c.done {
			src.status.Done = true
			m.refresh()
		}
		if got := strings.SplitN(text(m), "\n", 2)[0]; !strings.Contains(got, c.want) {
			t.Errorf("%s: header %q; want %q in it", c.name, got, c.want)
		}
	}
}
