package ui

import (
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// A source that has not described its run (listen before any sender, a replay whose import failed)
// shows its backend and topology as unknown, not as words with nothing after them.
func TestHeaderUnknownBackendAndTopology(t *testing.T) {
	for _, c := range []struct {
		name string
		meta timeline.Meta
		want string
	}{
		{name: "unsaid", meta: timeline.Meta{}, want: "backend unknown  topology unknown"},
		{name: "said", meta: timeline.Meta{Backend: "sim", Topology: "h100x8"}, want: "backend sim  topology h100x8"},
	} {
		win := timeline.NewWindow(1<<10, timeline.NewStrings())
		src := &fakeSource{win: win, info: SourceInfo{Name: "otlp", Meta: c.meta}}
		m := sized(src, 160, 40)
		if got := strings.SplitN(text(m), "\n", 2)[0]; !strings.Contains(got, c.want) {
			t.Errorf("%s: header %q; want %q in it", c.name, got, c.want)
		}
	}
}
