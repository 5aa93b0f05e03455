package ui

import (
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/timeline"
)

// analysedSource is a replay that analyses every event it emits itself (ui.Analyser), as
// session.ReplaySource does, whatever its window has trimmed.
type analysedSource struct {
	*fakeSource
	an *analysis.Analyzer
}

func (a *analysedSource) Analysed([]timeline.Event) (timeline.Snapshot, *analysis.Result) {
	snap := a.Snapshot()
	return snap, a.an.Result(&snap)
}

// The overview's line on events that went by while the view was behind says what is true of the
// source: a replay (which analyses every event itself) counts them in every figure and only the
// timeline and the log skipped them; a live source's figures are folded from what the console read
// and miss them, and only a recording beside the console holds them, when there is one.
func TestBehindSaysWhatMissesThem(t *testing.T) {
	const emitted = 3 << 14 // three of the window's chunks: it keeps two at least
	tests := []struct {
		name          string
		replay        bool
		recording     string
		want, wantNot []string
	}{
		{"replay", true, "", []string{"in every figure, not in the timeline or the log (seek back to see them)"}, []string{"not in the figures", "recorded"}},
		{"live, recording", false, "run.xfr", []string{"not in the figures, the timeline or the log; run.xfr has them"}, []string{"in every figure", "not recorded"}},
		{"live, not recording", false, "", []string{"not in the figures, the timeline or the log, and not recorded (--record FILE keeps every event)"}, []string{"in every figure", "has them"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := timeline.NewWindow(1, nil) // the least: the console, reading late, finds most trimmed
			an := analysis.New(timeline.Meta{Devices: 1, GPUsPerHost: 1})
			for i := range int64(emitted) {
				e := timeline.Event{Kind: timeline.KindKernel, Device: 0, Peer: timeline.NoDevice, Stream: 1, Start: 10 * i, End: 10*i + 8}
				w.Emit(&e)
				an.Emit(&e)
			}
			fake := &fakeSource{win: w, info: SourceInfo{Name: tc.name, Replay: tc.replay, Recording: tc.recording,
				Meta: timeline.Meta{Devices: 1, GPUsPerHost: 1}}, status: Status{Speed: 1}}
			var src Source = fake
			if tc.replay {
				src = &analysedSource{fakeSource: fake, an: an}
			}
			m := sized(src, 200, 45)
			over := text(m)
			for _, s := range tc.want {
				if !strings.Contains(over, s) {
					t.Errorf("the overview lacks %q:\n%s", s, over)
				}
			}
			for _, s := range tc.wantNot {
				if strings.Contains(over, s) {
					t.Errorf("the overview says %q:\n%s", s, over)
				}
			}
			// What it says is so: the figures count every event, or miss the ones that went by.
			counted := m.Result().Events
			if tc.replay != (counted == emitted) || counted == 0 {
				t.Errorf("the figures count %d of the %d events emitted", counted, emitted)
			}
		})
	}
}
