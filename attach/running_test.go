package attach

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xfertop/xfertop/join"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// Through a live server: a collective a connected rank posted is in flight (Server.InFlight, read
// from another goroutine while the server merges; a wait for its peer, which has not posted it)
// until the rank's connection ends.
func TestServerInFlight(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir, err := os.MkdirTemp("", "xa")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	epoch := time.Now().UnixNano()
	srv, err := Start(context.Background(), Config{Addr: Addr{"unix", filepath.Join(dir, "s")}, Epoch: epoch}, &sink{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c, err := Dial(srv.Addr(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := recordings.NewStreamWriter("test", c)
	_ = w.WriteMeta(recordings.Meta{EpochUnixNs: epoch, Extra: map[string]string{"nccl.host": "h", "nccl.pid": "7", "nccl.rank": "0"}})
	strs := timeline.NewStrings()
	posted := strs.ID(join.PostedLabel)
	_ = w.WriteStrings(1, strs.All()[1:])
	_ = w.WriteEvents([]timeline.Event{{Kind: timeline.KindMark, Label: posted, Start: 10, End: 10, Op: 1, Peer: 0, Ranks: 2, Comm: 9,
		Stream: 1, Sub: uint8(timeline.CollAllGather), Bytes: 64}})
	_ = w.Flush()
	var got []timeline.Event
	deadline := time.Now().Add(10 * time.Second)
	for len(got) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
		got = srv.InFlight(got[:0])
	}
	// Rank 1 of its communicator never posts it: rank 0 waits in it for its peer.
	if len(got) != 1 || got[0].Kind != timeline.KindPeerWait || timeline.CollOp(got[0].Sub) != timeline.CollAllGather || got[0].Start != 10 ||
		got[0].End < got[0].Start {
		t.Errorf("in flight while the rank waits: %+v; want its wait in the all-gather from its posting on", got)
	}
	_ = w.Close()
	c.Close()
	for len(got) > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
		got = srv.InFlight(got[:0])
	}
	if len(got) != 0 {
		t.Errorf("after the rank's connection ended: %+v still in flight", got)
	}
}
