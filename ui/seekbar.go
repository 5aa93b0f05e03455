package ui

import (
	"fmt"
	"strings"

	"github.com/xfertop/xfertop/units"
)

// SeekStatus is how far a replay's seek (the seek keys, or replay --from) has got before the
// replay shows events at its new position: over a large recording, reading every chunk before the
// position again for the diagnosis takes seconds, while the frame drawn is still the old
// position's (or, at the start, empty). The header shows it in place of the replay's position.
type SeekStatus struct {
	To          int64  // ns: the position sought
	Done, Total int64  // of Unit read; Total 0 until the reading has begun
	Unit        string // "chunks" (a recording with an index), "ns" (without: the time read up to)
}

// seekBarW is the width of the header's bars, the seek's and the replay's position.
const seekBarW = 10

// bar draws frac (0 to 1) as a bar of seekBarW cells.
func bar(frac float64) string {
	full := int(min(max(frac, 0), 1)*seekBarW + 0.5)
	return strings.Repeat("█", full) + strings.Repeat("░", seekBarW-full)
}

// seekClock is the header's clock while a seek is under way: where it goes, a bar of how much of
// the reading is done, and what that is.
func (m *Model) seekClock() string {
	sk, st := m.status.Seek, m.styles
	frac, what := 0.0, "starting"
	switch {
	case sk.Total > 0 && sk.Unit == "ns":
		frac = float64(sk.Done) / float64(sk.Total)
		what = fmt.Sprintf("%.0f%%: read to %s again for the diagnosis", 100*frac, units.Dur(sk.Done))
	case sk.Total > 0:
		frac = float64(sk.Done) / float64(sk.Total)
		what = fmt.Sprintf("%.0f%%: %d of %d %s before it read again for the diagnosis", 100*frac, sk.Done, sk.Total, sk.Unit)
	}
	return st.Muted.Render("seeking to ") + st.HeaderValue.Render(units.Dur(sk.To)) + " " + st.HeaderValue.Render(bar(frac)) +
		" " + st.Muted.Render(what)
}
