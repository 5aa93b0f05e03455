package analysis

import (
	"reflect"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// TestNamedCommunicators: the communicators a source names without a cache are listed with their
// name, size, members and the ranks in trouble: Flight Recorder's process groups (a membership
// mark per member rank) and NCCL RAS's communicators (a mark naming it, then an alert per rank in
// trouble). A process group some of whose ranks left no dump counts them unheard. A collective's op, an alert without a cause and a mark of another sequence number
// name no communicator.
func TestNamedCommunicators(t *testing.T) {
	strs := timeline.NewStrings()
	nd := timeline.NoDevice
	member := func(comm uint32, dev int32, ranks uint16, name string) timeline.Event {
		return timeline.Event{Kind: timeline.KindMark, Device: dev, Peer: nd, Comm: comm, Ranks: ranks, Start: 5, End: 5,
			Op: timeline.SeqOp(comm, 0), Aux: timeline.AuxSeqOp, Label: strs.ID(name)}
	}
	alert := func(comm uint32, dev int32, cause uint8) timeline.Event {
		return timeline.Event{Kind: timeline.KindAlert, Sub: cause, Device: dev, Peer: nd, Comm: comm, Ranks: 4, Start: 9, End: 9,
			Status: timeline.StatusError, Label: strs.ID("rank in trouble")}
	}
	coll := collEv(timeline.CollAllReduce, 4, 0, timeline.SeqOp(1, 5), 10, 20, 1024)
	coll.Comm, coll.Aux = 9, timeline.AuxSeqOp
	watchdog := alert(3, 1, 0)
	later := member(9, 0, 4, "not a membership")
	later.Op = timeline.SeqOp(9, 2)
	evs := []timeline.Event{
		member(1, 2, 4, "process group 0 (default_pg)"), member(1, 0, 4, "process group 0 (default_pg)"),
		member(2, 1, 3, "process group 1"), member(2, 1, 3, "process group 1"),
		member(3, nd, 4, "RAS communicator 0x7f"),
		alert(3, 3, timeline.AlertRankDead), alert(3, 2, timeline.AlertRankError), alert(3, 1, timeline.AlertCountMismatch),
		alert(3, 0, timeline.AlertRankMissing), alert(3, nd, timeline.AlertCommIncomplete), alert(3, 3, timeline.AlertRankDead),
		coll, watchdog, later,
	}
	a := New(timeline.Meta{Backend: "flight-recorder", Devices: 4})
	for i := range evs {
		a.Emit(&evs[i])
	}
	got := a.Result(strs).Communicators
	want := []Communicator{
		{ID: 1, Name: "process group 0 (default_pg)", Ranks: 4, Members: []int32{0, 2}, Unheard: 2, FirstNs: 5},
		{ID: 2, Name: "process group 1", Ranks: 3, Members: []int32{1}, Unheard: 2, FirstNs: 5},
		{ID: 3, Name: "RAS communicator 0x7f", Ranks: 4, Members: []int32{0, 1, 2, 3}, Dead: []int32{3}, Missing: []int32{0},
			Failing: []int32{2}, Behind: []int32{1}, Incomplete: true, FirstNs: 5},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("communicators\n%+v\nwant\n%+v", got, want)
	}
	if a.Result(strs).CommCache.Known {
		t.Error("the cache is known from a source that records none")
	}
}
