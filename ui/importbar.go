package ui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/xfertop/xfertop/units"
)

// ImportStatus is how far an import has got whose recording a replay plays while it is being
// written (a trace or an Nsight Systems export opened in the console). The console draws it under
// the header as a progress bar; seeking stays within what is imported (Length).
type ImportStatus struct {
	Done, Total int64         // units read, of Total (0: not known)
	Unit        string        // what Done counts: "row reads", "events"; "bytes" are shown as sizes
	Rate        float64       // units per second, so far
	ETA         time.Duration // estimated time left (0: not known)
	Elapsed     time.Duration // since the import began
	Events      int64         // events imported so far
	Length      int64         // ns: how far in time the events imported so far reach
	Finished    bool          // the import is over, completed or not
	// Err is what stopped the import early (Finished is then set): the events imported before it
	// stay shown and can be sought.
	Err error
}

// importLine draws the import's progress, or how it ended.
func (m *Model) importLine() string {
	im, st := m.status.Import, m.styles
	if im == nil {
		return ""
	}
	pct := 0.0
	if im.Total > 0 {
		pct = min(100*float64(im.Done)/float64(im.Total), 100)
	}
	count, unit, rate := func(n int64) string { return units.Count(float64(n)) }, " "+im.Unit, units.Count(im.Rate)+" "+im.Unit+"/s"
	switch im.Unit {
	case "bytes":
		count, unit, rate = units.Bytes, " read", units.Rate(im.Rate)
	case "files":
		count = grouped // a job's files are counted exactly: "1,024 files", not "1.02 k"
	}
	if im.Unit != "bytes" {
		n := im.Done
		if im.Total > 0 {
			n = im.Total
		}
		unit = " " + units.Plural(n, strings.TrimSuffix(im.Unit, "s"), im.Unit) // "1 file", "4 files"
	}
	of := count(im.Done) + unit
	if im.Total > 0 {
		of = count(im.Done) + " / " + count(im.Total) + unit
	}
	events := units.Count(float64(im.Events)) + " " + units.Plural(im.Events, "event")
	switch {
	case im.Err != nil:
		return st.Alert.Render(fmt.Sprintf("import stopped at %.0f%% (%s): %v", pct, of, im.Err)) +
			st.Muted.Render(fmt.Sprintf("  the %s imported before stay", events))
	case im.Finished && im.Unit == "events":
		return st.Muted.Render(fmt.Sprintf("imported %s in %s", of, units.Dur(im.Elapsed.Nanoseconds()))) // not "6 events (6 events)"
	case im.Finished:
		return st.Muted.Render(fmt.Sprintf("imported %s (%s) in %s", of, events, units.Dur(im.Elapsed.Nanoseconds())))
	}
	parts := []string{st.Title.Render("importing")}
	if im.Total > 0 { // a bar only where the whole is known
		const barW = 20
		full := int(pct/100*barW + 0.5)
		bar := strings.Repeat("█", full) + strings.Repeat("░", barW-full)
		parts = append(parts, st.HeaderValue.Render(bar), st.HeaderValue.Render(fmt.Sprintf("%.0f%%", pct)))
	}
	parts = append(parts, of)
	if im.Rate > 0 {
		parts = append(parts, rate)
	}
	if im.ETA > 0 {
		parts = append(parts, "ETA "+units.Dur(im.ETA.Round(time.Second).Nanoseconds()))
	}
	so := events + " so far; seek within " + units.Dur(im.Length)
	switch {
	case im.Events == 0:
		so = "no events yet" // an export is surveyed whole before its first event
	case im.Unit == "events":
		so = "seek within " + units.Dur(im.Length)
	}
	return strings.Join(append(parts, st.Muted.Render(so)), "  ")
}

// grouped writes n in full with its thousands grouped: 1,024.
func grouped(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
