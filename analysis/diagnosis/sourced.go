package diagnosis

import (
	"strings"

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

// busyElsewhere is what a hang's evidence guesses of a culprit rank that waits in no recorded op;
// a source's statement of that rank (NCCL RAS: dead, missing) replaces the guess (mergeSourced).
const busyElsewhere = " (busy elsewhere: compute, data, a host hang)"

// mergeSourced appends sourced to found, folding a source's dead or missing rank into the hang
// or missing-rank finding of found that names the same rank as its culprit: one verdict, of the
// source's kind (the cause: RAS considers the rank dead), that keeps the hang's collective,
// sequence number, communicator and ranks (what the cause held up), its evidence the source's
// statement, then the hang's, and its onset the earlier of the two. (Flight Recorder's dumps
// joined with an NCCL RAS report: rank 3 never entered all_reduce #5, and RAS says rank 3, on
// node1, is dead.) Each hang takes one statement; a rank's further ones stay findings of their own.
func mergeSourced(found, sourced []Finding) []Finding {
	culprits := map[int32]int{} // rank → the first hang or missing-rank finding naming it
	for i := range found {
		if f := &found[i]; f.Rank >= 0 && (f.Kind == Hang || f.Kind == MissingRank) {
			if _, ok := culprits[f.Rank]; !ok {
				culprits[f.Rank] = i
			}
		}
	}
	for _, s := range sourced {
		i, ok := culprits[s.Rank]
		if !ok || s.Rank < 0 || (s.Kind != DeadRank && s.Kind != MissingRank) {
			found = append(found, s)
			continue
		}
		delete(culprits, s.Rank)
		h := &found[i]
		h.Kind = s.Kind
		h.Evidence = s.Evidence + "; " + strings.ReplaceAll(h.Evidence, busyElsewhere, "")
		h.Onset, h.At = min(h.Onset, s.Onset), max(h.At, s.At)
		h.Confidence = max(h.Confidence, s.Confidence)
		if h.Host < 0 {
			h.Host = s.Host
		}
	}
	return found
}
