package diagnosis

import (
	"fmt"
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
			f.Coll, f.behind = e.CountBehind()
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
// A source's count mismatch naming a rank that found has inside the hung collective is weighed
// against it (joinBehind).
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
		if s.Kind == Hang && s.Rank >= 0 {
			if j := heldUp(found, s); j >= 0 {
				if !joinBehind(&found[j], &s) {
					found = append(found, s)
				}
				continue
			}
		}
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

// heldUp is the index in found of the hang (or dead or missing rank's hang) whose collective the
// rank of a source's count mismatch (s) is inside, waiting with the others for another rank, by
// sequence number (Flight Recorder); the collectives must not differ where both are known. -1:
// none.
func heldUp(found []Finding, s Finding) int {
	for i := range found {
		f := &found[i]
		if f.Rank == s.Rank || (f.Kind != Hang && f.Kind != DeadRank && f.Kind != MissingRank) ||
			(s.Coll != 0 && f.Coll != 0 && s.Coll != f.Coll) {
			continue
		}
		for _, r := range f.Waiting {
			if r == s.Rank {
				return i
			}
		}
	}
	return -1
}

// joinBehind weighs a source's count mismatch (s: RAS counts its rank behind, "they have not
// entered the AllReduce the others are in") against the hang h that has the rank inside its
// collective, waiting with the others. One behind, the count lagged: the rank had not launched
// the collective's kernel when RAS looked, and is held up with the others, not a culprit: the
// statement joins h's evidence and is no finding of its own (true). Further behind, or by how much
// not known, RAS and Flight Recorder disagree: s stays a finding, at half its confidence, its
// evidence saying what contradicts it (false).
func joinBehind(h, s *Finding) bool {
	op := h.Coll.String()
	if h.Coll == 0 {
		op = "the collective"
	}
	inside := fmt.Sprintf("%s #%d", op, h.Seq)
	if s.behind == 1 {
		h.Evidence += fmt.Sprintf("; RAS counts rank %d one %s behind the others: it had not launched #%d's kernel when RAS looked, "+
			"and Flight Recorder has it inside %s, waiting with the others: held up like them, not a culprit", s.Rank, op, h.Seq, inside)
		return true
	}
	how := "by how many, RAS does not say"
	if s.behind > 1 {
		how = fmt.Sprintf("RAS counts it %d behind", s.behind)
	}
	s.Evidence += fmt.Sprintf("; contradicted by Flight Recorder, which has rank %d inside %s, waiting with the others (%s)", s.Rank, inside, how)
	s.Confidence /= 2
	return false
}
