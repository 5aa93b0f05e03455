package diagnosis

import (
	"fmt"
	"github.com/xfertop/xfertop/analysis/hostmap"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// coll is one rank's part of collective seq on communicator 1 (a sequence-numbered op when seqOp).
func coll(rank int32, op uint64, seqOp bool, status uint8, start int64) timeline.Event {
	e := timeline.Event{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Device: rank, Peer: timeline.NoDevice, Comm: 1, Ranks: 2,
		Op: op, Status: status, Start: start, End: start + 1000, Queued: -1, Bytes: 1 << 20}
	if seqOp {
		e.Aux = timeline.AuxSeqOp
	}
	return e
}

// TestSequenceMatching: ranks are matched by the sequence numbers their collectives carry only
// when the source says its ops are sequence numbers (AuxSeqOp). The NCCL plugin's ops are hashes,
// any of whose bits may be set: a job whose recording ends with one rank a collective ahead is no
// hang.
func TestSequenceMatching(t *testing.T) {
	ops := []uint64{1<<63 | 5, 1<<63 | 9, 1<<63 | 20}
	for _, c := range []struct {
		name  string
		seqOp bool
		want  int
	}{
		{"hashed ops", false, 0},
		{"sequence numbers", true, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := New(nil)
			var evs []timeline.Event
			for i, op := range ops {
				evs = append(evs, coll(1, op, c.seqOp, timeline.StatusOK, int64(i)*1e6))
				if i < 2 {
					evs = append(evs, coll(0, op, c.seqOp, timeline.StatusOK, int64(i)*1e6))
				}
			}
			for i := range evs {
				d.Add(&evs[i])
			}
			fs := d.Result(nil)
			if len(fs) != c.want {
				t.Fatalf("%d findings %v; want %d", len(fs), fs, c.want)
			}
			if c.want == 1 && (fs[0].Kind != Hang || fs[0].Rank != 0 || fs[0].Seq != 20) {
				t.Errorf("finding %s (#%d); want rank 0 never entered #20", fs[0].String(), fs[0].Seq)
			}
		})
	}
}

// TestSourcedFindings: an alert with a cause is a finding of its kind, once however often it is
// raised; an alert without one is not.
func TestSourcedFindings(t *testing.T) {
	strs := timeline.NewStrings()
	d := New(hostmap.ByID(8))
	msg := strs.ID("RAS: communicator 0x1 (16 ranks): rank 9 on h1 pid 7 GPU 1 is considered dead")
	for range 3 {
		d.Add(&timeline.Event{Kind: timeline.KindAlert, Sub: timeline.AlertRankDead, Device: 9, Comm: 4, Status: timeline.StatusError, Label: msg})
	}
	d.Add(&timeline.Event{Kind: timeline.KindAlert, Device: 3, Status: timeline.StatusError, Label: strs.ID("an error")})
	fs := d.Result(strs)
	if len(fs) != 1 || fs[0].Kind != DeadRank || fs[0].Rank != 9 || fs[0].Host != 1 || fs[0].Comm != 4 || fs[0].Evidence != strs.Lookup(msg) {
		t.Errorf("findings %+v; want one dead rank 9 on host 1, communicator 4, RAS's message its evidence", fs)
	}
}

// TestUnseenMembers: a collective every member seen entered, on a communicator with members never
// seen, is a hang; the culprit is the unseen member the source names as unrecorded
// (timeline.StatusNoRecord), and unknown where the source only counts them.
func TestUnseenMembers(t *testing.T) {
	for _, c := range []struct {
		name     string
		named    []int32
		rank     int32
		missing  string
		evidence string
	}{
		{"counted only", nil, -1, "[]", "1 member of its 3 was never seen (no record of it): which of them never entered it is unknown"},
		{"named", []int32{2}, 2, "[2]", "rank 2 never entered it as far as is known: no dump of rank 2, what it did is unknown"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := New(nil)
			evs := []timeline.Event{
				coll(0, timeline.SeqOp(1, 1), true, timeline.StatusPending, 0),
				coll(1, timeline.SeqOp(1, 1), true, timeline.StatusPending, 10),
			}
			for _, r := range c.named {
				evs = append(evs, timeline.Event{Kind: timeline.KindMark, Device: timeline.NoDevice, Peer: r, Comm: 1, Ranks: 3,
					Op: timeline.SeqOp(1, 0), Aux: timeline.AuxSeqOp, Status: timeline.StatusNoRecord})
			}
			for i := range evs {
				evs[i].Ranks = 3
				d.Add(&evs[i])
			}
			fs := d.Result(nil)
			if len(fs) != 1 {
				t.Fatalf("%d findings %v; want 1", len(fs), fs)
			}
			f := fs[0]
			if f.Kind != Hang || f.Rank != c.rank || fmt.Sprint(f.Missing) != c.missing || f.MissingN != 1 || (f.Rank >= 0) != (f.Confidence > 0) ||
				!strings.Contains(f.Evidence, c.evidence) {
				t.Errorf("finding %s (rank %d missing %v of %d, confidence %.2f); want rank %d missing %s, evidence containing %q",
					f.String(), f.Rank, f.Missing, f.MissingN, f.Confidence, c.rank, c.missing, c.evidence)
			}
		})
	}
}
