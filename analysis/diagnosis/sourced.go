package diagnosis

import (
	"github.com/xfertop/xfertop/timeline"
)

// maxSourced bounds the distinct alerts with a cause kept (a RAS poll repeats its alerts).
const maxSourced = 256

// addSourced keeps an alert a source raised with a cause, once per cause, rank, communicator and
// message (a poller sees the same dead rank every poll): the first sighting is its onset.
func (d *Diagnosis) addSourced(e *timeline.Event) {
	for i := range d.sourced {
		s := &d.sourced[i]
		if s.Sub == e.Sub && s.Device == e.Device && s.Comm == e.Comm && s.Label == e.Label {
			s.End = max(s.End, e.End)
			return
		}
	}
	if len(d.sourced) < maxSourced {
		d.sourced = append(d.sourced, *e)
	} else {
		d.Dropped++
	}
}

// sourcedFindings turns the alerts with a cause into findings: the source watched the rank and
// says what is wrong with it (NCCL RAS), so the verdict is its statement, kind by cause, with its
// message as the evidence. The ranks behind in a count mismatch have not entered the collective
// the others are in: a hang, its culprit the first of them. A rank told dead twice (RAS's monitor
// says so at once, its status per communicator) is one finding, the communicator's, from the
// first telling.
func (d *Diagnosis) sourcedFindings(labels timeline.Labels) []Finding {
	out := make([]Finding, 0, len(d.sourced))
	dead := map[int32]int{} // rank → its dead-rank finding in out
	for i := range d.sourced {
		e := &d.sourced[i]
		f := Finding{Rank: e.Device, Host: -1, Link: -1, Onset: e.Start, At: e.End, Step: d.step, Comm: e.Comm, Confidence: 1}
		switch e.Sub {
		case timeline.AlertRankDead:
			f.Kind = DeadRank
		case timeline.AlertRankMissing, timeline.AlertCommIncomplete:
			f.Kind = MissingRank
		case timeline.AlertCountMismatch:
			f.Kind = Hang
		case timeline.AlertRankError:
			f.Kind = RankError
		default:
			continue
		}
		if f.Rank >= 0 {
			f.Host = d.hostOf(f.Rank)
			if f.Kind == Hang || f.Kind == MissingRank {
				f.Missing, f.MissingN = []int32{f.Rank}, 1
			}
		} else {
			f.Rank, f.Confidence = -1, 0
		}
		if labels != nil {
			f.Evidence = labels.Lookup(e.Label)
		}
		if f.Kind == DeadRank && f.Rank >= 0 {
			if i, ok := dead[f.Rank]; ok {
				g := &out[i]
				onset := min(g.Onset, f.Onset)
				if g.Comm == 0 && f.Comm != 0 {
					*g = f
				}
				g.Onset = onset
				continue
			}
			dead[f.Rank] = len(out)
		}
		out = append(out, f)
	}
	return out
}
