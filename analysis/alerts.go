package analysis

import (
	"slices"

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
	label   uint32
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
