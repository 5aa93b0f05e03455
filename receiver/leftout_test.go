package receiver

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/xfertop/xfertop/timeline"
)

// Every span left out is logged or counted in a log line: lines the limiter held back are said at
// the end, and foreign spans (not xfertop's) get a line of their own.
func TestLeftOutSpansAreLogged(t *testing.T) {
	var lines []string
	g := &logLimiter{logf: func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }}
	g.log("invalid", "left out span %d", 1)
	g.log("invalid", "left out span %d", 2) // within the same second: held back
	g.flush()
	if len(lines) != 2 || !strings.Contains(lines[1], `1 more line like the last "invalid" line held back`) {
		t.Errorf("lines = %q; want the first and a count of the one held back", lines)
	}

	lines = nil
	m := NewMerger(timeline.NewStrings(), 0, nil)
	m.SetLog(func(reason, f string, a ...any) { lines = append(lines, reason+": "+fmt.Sprintf(f, a...)) })
	d := &Decoded{Resources: []Resource{{HostName: "h0", Host: -1}}, Strings: []string{""}, Foreign: 2}
	m.Merge(d, time.Unix(1_700_000_000, 0))
	if len(lines) != 1 || !strings.Contains(lines[0], "ignored 2 spans from h0") {
		t.Errorf("lines = %q; want one naming the 2 foreign spans and their host", lines)
	}
	if st := m.Stats(); st.Foreign != 2 {
		t.Errorf("Foreign = %d; want 2", st.Foreign)
	}
}
