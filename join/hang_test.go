package join

import (
	"testing"
	"time"

	"github.com/xfertop/xfertop/timeline"
)

func posted(comm uint32, op uint64, rank int32, n uint16, seq uint32) *timeline.Event {
	return &timeline.Event{Kind: timeline.KindMark, Op: op, Comm: comm, Peer: rank, Ranks: n, Aux: seq, Sub: uint8(timeline.CollAllReduce)}
}

func TestHangs(t *testing.T) {
	t0 := int64(100e9)
	h := newHangs(time.Second)
	for r := range int32(3) {
		h.posted(posted(1, 10, r, 3, 0), t0) // complete
	}
	h.posted(posted(1, 11, 0, 3, 1), t0) // rank 1 and 2 missing
	h.posted(posted(1, 12, 0, 3, 2), t0) // queued behind the same hang
	h.posted(posted(2, 20, 1, 2, 5), t0) // another communicator, rank 0 missing
	if due := h.due(t0 + int64(500*time.Millisecond)); len(due) != 0 {
		t.Fatalf("due before the timeout: %+v", due)
	}
	due := h.due(t0 + int64(2*time.Second))
	if len(due) != 2 {
		t.Fatalf("due %+v, want one per communicator", due)
	}
	if d := due[0]; d.seq != 1 || len(d.posted) != 1 || len(d.missing) != 2 || d.missing[0] != 1 || d.missing[1] != 2 {
		t.Errorf("first hang %+v", d)
	}
	if d := due[1]; d.comm != 2 || d.seq != 5 || len(d.missing) != 1 || d.missing[0] != 0 {
		t.Errorf("second hang %+v", d)
	}
	if again := h.due(t0 + int64(3*time.Second)); len(again) != 0 {
		t.Errorf("alerted twice: %+v", again)
	}
	// The missing ranks arrive: the communicator moves again and may hang anew.
	h.posted(posted(1, 11, 1, 3, 1), t0)
	h.posted(posted(1, 11, 2, 3, 1), t0)
	if h.stuck[1] {
		t.Error("communicator 1 still marked stuck")
	}
	off := newHangs(-1)
	off.posted(posted(1, 1, 0, 2, 0), t0)
	if d := off.due(t0 + int64(time.Hour)); len(d) != 0 {
		t.Errorf("hang detection off, yet %+v", d)
	}
}
