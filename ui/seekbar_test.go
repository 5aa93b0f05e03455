package ui

import (
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// A seek over a large recording shows how far it has got in the header, as the replay's position
// is shown, and every tick shows more of it, paused too: the screen is never frozen on the old
// position with nothing said. Once the replay is at the new position, the header shows it.
func TestSeekShowsProgress(t *testing.T) {
	w := timeline.NewWindow(0, nil)
	kernels(w, 2, 10, 0)
	src := &fakeSource{win: w, info: SourceInfo{Name: "big.xfr", Replay: true, Duration: 10_000_000_000, Meta: timeline.Meta{Devices: 2, GPUsPerHost: 2}},
		status: Status{Speed: 1, Seek: &SeekStatus{To: 7_000_000_000}}}
	m := sized(src, 200, 30)
	header := func() string { return strings.SplitN(text(m), "\n", 2)[0] }
	for _, c := range []struct {
		name   string
		seek   *SeekStatus
		pause  bool
		want   []string
		absent []string
	}{
		{"begun", &SeekStatus{To: 7_000_000_000}, false, []string{"seeking to 7.00 s", "░░░░░░░░░░ starting", "⏩ seeking"}, []string{"/ 10.0 s"}},
		{"chunks read", &SeekStatus{To: 7_000_000_000, Done: 5, Total: 20, Unit: "chunks"}, false,
			[]string{"seeking to 7.00 s", "███░░░░░░░ 25%: 5 of 20 chunks before it read again for the diagnosis"}, nil},
		{"paused, more read", &SeekStatus{To: 7_000_000_000, Done: 15, Total: 20, Unit: "chunks"}, true,
			[]string{"████████░░ 75%: 15 of 20 chunks", "❚❚ paused · ⏩ seeking"}, nil},
		{"without an index", &SeekStatus{To: 7_000_000_000, Done: 3_500_000_000, Total: 7_000_000_000, Unit: "ns"}, true,
			[]string{"█████░░░░░ 50%: read to 3.50 s again for the diagnosis"}, nil},
		{"there", nil, false, []string{"t ", "/ 10.0 s"}, []string{"seeking"}},
	} {
		src.status.Seek = c.seek
		switch {
		case c.pause && !m.Paused():
			press(m, "space")
		case !c.pause && m.Paused():
			resume(m)
		}
		tickAndFold(m)
		got := header()
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: the header lacks %q:\n%s", c.name, w, got)
			}
		}
		for _, w := range c.absent {
			if strings.Contains(got, w) {
				t.Errorf("%s: the header shows %q:\n%s", c.name, w, got)
			}
		}
	}
}
