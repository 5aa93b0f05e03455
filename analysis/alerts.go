package analysis

import (
	"slices"

	"github.com/xfertop/xfertop/analysis/diagnosis"
	"github.com/xfertop/xfertop/timeline"
)

// MaxAlertsKept is how many alerts the analysis lists; later ones are counted.
const MaxAlertsKept = 100

// Alert is a watchdog or error alert.
type Alert struct {
	At      int64   `json:"at_ns"`
	Kind    string  `json:"kind"` // watchdog or error
	Message string  `json:"message"`
	Op      uint64  `json:"op"`
	Ranks   []int32 `json:"ranks"`
	Bytes   int64   `json:"bytes"`
	// Root is, for a watchdog's alert, the diagnosis's finding naming the root of the hang the op
	// waited in (diagnosis.RootOf), quoted so that the alert and the finding name the same rank:
	// the alert's own message names the peer the op waited for, which may itself be waiting on
	// another rank. Nil when the diagnosis names none (yet).
	Root  *AlertRoot `json:"root,omitempty"`
	label uint32
}

// AlertRoot is the rank (and host, -1 when not known) the diagnosis names as the root of a hang,
// and its finding on one line.
type AlertRoot struct {
	// Rank is the root's rank; null where it is a group of ranks (the ranks stuck inside a
	// collective, which of them holds it unknown) that Culprit names.
	Rank *int32 `json:"rank"`
	// Host is the rank's host; null where the job's layout is not known.
	Host    *int32 `json:"host"`
	Culprit string `json:"culprit"` // "rank 10 (host 1 GPU 2)"
	Finding string `json:"finding"`
}

type alerts struct {
	list  []Alert
	count int64
}

func (a *alerts) add(e *timeline.Event) {
	if e.Kind != timeline.KindAlert {
		return
	}
	a.count++
	if len(a.list) == MaxAlertsKept {
		return
	}
	kind := "error"
	if e.Status == timeline.StatusTimeout {
		kind = "watchdog"
	}
	al := Alert{At: e.Start, Kind: kind, Op: e.Op, Bytes: e.Bytes, Ranks: []int32{}, label: e.Label}
	for _, d := range [2]int32{e.Device, e.Peer} {
		if d >= 0 {
			al.Ranks = append(al.Ranks, d)
		}
	}
	a.list = append(a.list, al)
}

func (a *alerts) result(labels Labels) ([]Alert, int64) {
	out := slices.Clone(a.list)
	if out == nil {
		out = []Alert{}
	}
	for i := range out {
		if labels != nil {
			out[i].Message = labels.Lookup(out[i].label)
		}
		out[i].Ranks = slices.Clone(out[i].Ranks)
	}
	return out, a.count
}

// quoteRoots gives each watchdog alert the finding naming the root of its hang, when the
// diagnosis has one that names a rank.
func quoteRoots(as []Alert, d *diagnosis.Diagnosis, labels Labels) {
	for i := range as {
		if as[i].Kind != "watchdog" {
			continue
		}
		// A root that is no one rank (ranks stuck inside a collective: mode=in) is quoted too:
		// without it the alert names only the peer the op waited for.
		if f, ok := d.RootOf(as[i].Op, labels); ok {
			as[i].Root = &AlertRoot{Culprit: f.Culprit(), Finding: f.String()}
			if f.Rank >= 0 {
				r := f.Rank
				as[i].Root.Rank = &r
			}
			if h := f.Host; h >= 0 {
				as[i].Root.Host = &h
			}
		}
	}
}

// String says the root on one line, as the report, the console and the command's exit message
// quote it beside the alert.
func (r *AlertRoot) String() string { return "root of this hang (diagnosis): " + r.Finding }

// Short names the root's culprit alone, for a one-line message.
func (r *AlertRoot) Short() string { return "root of this hang (diagnosis): " + r.Culprit }
