package diagnosis

import (
	"strconv"
	"strings"

	"github.com/xfertop/xfertop/timeline"
)

// A finding built while the run goes on (Pending) cannot read the labels of the ops it names: the
// table that holds them is given to Result. It writes a reference in their place, which Result
// (and RootOf) resolve: one text for the report, the JSON and the console, which all read the
// findings through them. The marks are code points of Unicode's private use area, which no label
// or message of xfertop's holds.
const (
	refOpen  = '\uE000'
	refClose = '\uE001'
)

// labelRef is the reference to label id that a name carries: `, "stage 1→2 microbatch 3"` once
// resolved; "" for no label.
func labelRef(id uint32) string {
	if id == 0 {
		return ""
	}
	return string(refOpen) + strconv.FormatUint(uint64(id), 10) + string(refClose)
}

// resolveLabels replaces the label references in s by `, "label"`, or by nothing where labels is
// nil or the label is empty. A quoted label shows a mark of its own escaped (strconv.Quote), so
// none is left in the result: a stray one (labelRef writes them in pairs) is dropped, not shown.
func resolveLabels(s string, labels timeline.Labels) string {
	if !strings.ContainsRune(s, refOpen) && !strings.ContainsRune(s, refClose) {
		return s
	}
	var b strings.Builder
	text := func(s string) { b.WriteString(strings.ReplaceAll(s, string(refClose), "")) }
	for {
		i := strings.IndexRune(s, refOpen)
		if i < 0 {
			text(s)
			return b.String()
		}
		j := strings.IndexRune(s[i:], refClose)
		if j < 0 {
			text(s[:i])
			s = s[i+len(string(refOpen)):]
			continue
		}
		text(s[:i])
		id, err := strconv.ParseUint(s[i+len(string(refOpen)):i+j], 10, 32)
		if err == nil && labels != nil {
			if l := labels.Lookup(uint32(id)); l != "" {
				b.WriteString(", " + strconv.Quote(l))
			}
		}
		s = s[i+j+len(string(refClose)):]
	}
}

// resolved is f with the label references in its evidence resolved.
func resolved(f Finding, labels timeline.Labels) Finding {
	f.Evidence = resolveLabels(f.Evidence, labels)
	return f
}
