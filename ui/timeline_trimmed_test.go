package ui

import (
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/widget"
)

// A jump to a time whose events the window has since trimmed draws an empty span: the detail line
// says so, and how to get back to what is held, rather than show the span as idle. Live it
// advises recording and replaying; a replay, which is one already, to seek back.
func TestTimelineSaysTrimmed(t *testing.T) {
	for _, c := range []struct {
		replay    bool
		want, not string
	}{
		{want: "f follows live; record and replay to look back"},
		{replay: true, want: "seek back (←) to look there", not: "record and replay"},
	} {
		strs := timeline.NewStrings()
		win := timeline.NewWindow(1<<14, strs) // one chunk: older events are trimmed
		for i := range int64(3 << 14) {
			e := timeline.Event{Kind: timeline.KindKernel, Device: 0, Peer: -1, Stream: 1, Queued: -1, Start: i * 1000, End: i*1000 + 900}
			win.Emit(&e)
		}
		src := &fakeSource{win: win, info: SourceInfo{Name: "synthetic", Replay: c.replay, Meta: timeline.Meta{Source: "sim", Devices: 1, GPUsPerHost: 1}},
			status: Status{Speed: 1, Done: true}}
		m := sized(src, 160, 30)
		press(m, "2")
		text(m)
		m.Update(widget.JumpToMsg{Device: 0, Stream: 1, Time: 1_000_000, Dur: 100_000})
		if got := text(m); !strings.Contains(got, "the events were trimmed from memory") || !strings.Contains(got, c.want) || (c.not != "" && strings.Contains(got, c.not)) {
			t.Errorf("replay %v: a jump before the oldest held event does not say it was trimmed, and %q (not %q):\n%s", c.replay, c.want, c.not, got)
		}
		press(m, "f") // following again: the span drawn is held
		if got := text(m); strings.Contains(got, "trimmed from memory") {
			t.Errorf("replay %v: following, the timeline still says its span was trimmed:\n%s", c.replay, got)
		}
	}
}

// A replay sought to a time holds nothing before it, though it trimmed nothing: a jump there (a
// finding's onset) says so and how to get back, rather than draw the span as idle.
func TestTimelineSaysSoughtPast(t *testing.T) {
	strs := timeline.NewStrings()
	win := timeline.NewWindow(0, strs)
	win.SetGeneration(2)
	win.SetFrom(47_000_000)
	for i := range int64(1000) {
		e := timeline.Event{Kind: timeline.KindKernel, Device: 0, Peer: -1, Stream: 1, Queued: -1, Start: 47_000_000 + i*1000, End: 47_000_000 + i*1000 + 900}
		win.Emit(&e)
	}
	src := &fakeSource{win: win, info: SourceInfo{Name: "synthetic", Replay: true, Meta: timeline.Meta{Source: "sim", Devices: 1, GPUsPerHost: 1}},
		status: Status{Speed: 1, Done: true}}
	m := sized(src, 160, 30)
	press(m, "2")
	text(m)
	m.Update(widget.JumpToMsg{Device: 0, Stream: 1, Time: 1_100_000, Dur: 100_000})
	if got := text(m); !strings.Contains(got, "no events are held (the replay went there)") || !strings.Contains(got, "seek back (←) to look there") {
		t.Errorf("a jump before where the replay went does not say so:\n%s", got)
	}
}
