package join

import (
	"testing"

	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// A collective posted by some ranks of its communicator and not the others is, on the ranks that
// posted it, a wait for their peers from their posting: Waits reports each (the diagnosis judges
// them); once every rank has posted it, it runs and no one waits.
func TestWaits(t *testing.T) {
	j := New(Config{})
	mb, err := j.Add("rank 0", &recordings.Meta{Extra: map[string]string{"nccl.rank": "0"}})
	if err != nil {
		t.Fatal(err)
	}
	j.AddStrings(mb, []string{PostedLabel})
	for _, c := range []struct{ rank, dev int32 }{{0, 10}, {1, 11}, {2, 12}} {
		j.Event(mb, &timeline.Event{Kind: timeline.KindCommInit, Device: c.dev, Peer: -1, Comm: 1, Aux: uint32(c.rank), Ranks: 3})
	}
	post := func(op uint64, rank int32, at int64) {
		j.Event(mb, &timeline.Event{Kind: timeline.KindMark, Label: 1, Start: at, End: at, Device: 10 + rank, Op: op, Comm: 1,
			Peer: rank, Ranks: 3, Stream: 1, Sub: uint8(timeline.CollAllReduce)})
	}
	for r := range int32(3) {
		post(10, r, 100) // every rank: it runs
	}
	post(11, 0, 200) // ranks 1 and 2 never post it
	post(11, 2, 300)
	got := j.Waits(nil, 1000, timeline.StatusTimeout)
	if len(got) != 2 {
		t.Fatalf("waits %+v; want ranks 0 and 2's of op 11", got)
	}
	for i, want := range []struct {
		dev   int32
		start int64
	}{{10, 200}, {12, 300}} {
		e := got[i]
		if e.Kind != timeline.KindPeerWait || e.Op != 11 || e.Device != want.dev || e.Start != want.start || e.End != 1000 ||
			e.Status != timeline.StatusTimeout || timeline.CollOp(e.Sub) != timeline.CollAllReduce || e.Peer != timeline.NoDevice || e.Comm != 1 {
			t.Errorf("wait %d: %+v; want device %d's all-reduce wait from %d to 1000", i, e, want.dev, want.start)
		}
	}
	post(11, 1, 400)
	if got := j.Waits(nil, 1000, timeline.StatusOK); len(got) != 0 {
		t.Errorf("waits %+v after every rank posted", got)
	}
}
