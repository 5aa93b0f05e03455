package join

import (
	"testing"

	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// A collective a rank posted is in flight on its stream from the posting (a wait for its peers
// while one of them has not posted it), until the rank reports it ended or its connection ends;
// another rank's part of it, or another collective, does not close it.
func TestJoinInFlight(t *testing.T) {
	const posted = 1 // the posting label's id in each member's table
	mark := func(op uint64) timeline.Event {
		return timeline.Event{Kind: timeline.KindMark, Label: posted, Start: 100, End: 100, Queued: -1, Device: 0, Stream: 3, Op: op,
			Sub: uint8(timeline.CollAllReduce), Comm: 9, Ranks: 2, Bytes: 1 << 20, Peer: 0}
	}
	ended := func(dev int32, op uint64) timeline.Event {
		return timeline.Event{Kind: timeline.KindCollective, Start: 150, End: 400, Queued: -1, Device: dev, Stream: 3, Op: op,
			Sub: uint8(timeline.CollAllReduce), Comm: 9, Ranks: 2, Peer: timeline.NoDevice}
	}
	tests := []struct {
		name    string
		events  []timeline.Event
		closeMb bool
		want    int // collectives in flight
	}{
		{"posted", []timeline.Event{mark(77)}, false, 1},
		{"posted twice", []timeline.Event{mark(77), mark(77)}, false, 1},
		{"reported ended", []timeline.Event{mark(77), ended(0, 77)}, false, 0},
		{"another rank's part ended", []timeline.Event{mark(77), ended(1, 77)}, false, 1},
		{"another collective ended", []timeline.Event{mark(77), ended(0, 78)}, false, 1},
		{"connection ended", []timeline.Event{mark(77)}, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := New(Config{})
			mb, err := j.Add("rank 0", &recordings.Meta{Extra: map[string]string{"nccl.rank": "0"}})
			if err != nil {
				t.Fatal(err)
			}
			j.AddStrings(mb, []string{PostedLabel})
			stream := uint32(0)
			for i := range tt.events {
				e := tt.events[i]
				emitted := j.Event(mb, &e)
				if e.Kind == timeline.KindMark {
					stream = e.Stream
					if emitted {
						t.Errorf("the posting mark reached the session: %+v", e)
					}
				}
			}
			if tt.closeMb {
				j.Ended(mb)
			}
			got := j.InFlight(nil, 500)
			if len(got) != tt.want {
				t.Fatalf("in flight: %+v; want %d", got, tt.want)
			}
			for _, e := range got {
				// Rank 1 of its communicator has not posted it: rank 0 waits for it.
				if e.Kind != timeline.KindPeerWait || timeline.CollOp(e.Sub) != timeline.CollAllReduce || e.Start != 100 || e.End != 500 ||
					e.Stream != stream || e.Stream == 0 || e.Bytes != 1<<20 || e.Device != 0 {
					t.Errorf("in flight: %+v; want the all-reduce on the session's stream %d from its posting (100) to now (500)", e, stream)
				}
			}
		})
	}
}
