package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xfertop/xfertop/attach"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// p2pRankStream sends what a rank's plugin sends for a send or receive of 4 KiB with the other
// rank: its communicator, then the transfer. Each rank names its own host.
func p2pRankStream(t *testing.T, sock string, rank int, host string) {
	c, err := attach.Dial(attach.Addr{Network: "unix", Address: sock}, time.Second)
	if err != nil {
		t.Error(err)
		return
	}
	defer c.Close()
	w, _ := recordings.NewStreamWriter("rank", c)
	_ = w.WriteMeta(recordings.Meta{EpochUnixNs: time.Now().UnixNano(),
		Extra: map[string]string{"nccl.host": host, "nccl.rank": strconv.Itoa(rank), "nccl.pid": strconv.Itoa(100 + rank)}})
	kind, peer := timeline.KindSend, int32(1)
	if rank == 1 {
		kind, peer = timeline.KindRecv, 0
	}
	evs := []timeline.Event{
		{Kind: timeline.KindCommInit, Device: int32(rank), Peer: -1, Comm: 7, Aux: uint32(rank), Ranks: 2},
		{Kind: kind, Start: 1e6, End: 2e6, Bytes: 4096, Op: 99, Device: int32(rank), Peer: peer, Comm: 7, Stream: 1},
	}
	_ = w.WriteEvents(evs)
	_ = w.Close()
}

// A rank's send reaches attach before its peer has sent anything (rank 1 connects after rank 0 has
// finished): when attach reports, both ranks have named their hosts, so the send is on the NICs of
// two hosts, not left in "link unknown".
func TestAttachSendBeforePeerHeard(t *testing.T) {
	sock, done := attachInBackground(t, "--headless", "--json", "--linger", "700ms", "--hang-timeout", "300ms")
	p2pRankStream(t, sock, 0, "hostA")
	time.Sleep(100 * time.Millisecond) // rank 0's events are in before rank 1 connects (the order, not a timing assertion)
	p2pRankStream(t, sock, 1, "hostB")
	r := <-done
	if r.code != exitOK {
		t.Fatalf("status %d, stderr %q", r.code, r.err)
	}
	var rep struct {
		Links struct {
			Devices []struct {
				Device       int32    `json:"device"`
				NVLink       *int64   `json:"nvlink_bytes"`
				NIC          *int64   `json:"nic_bytes"`
				Unattributed int64    `json:"unattributed_bytes"`
				LowerBound   []string `json:"lower_bound_links"`
			} `json:"devices"`
		} `json:"links"`
	}
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, r.out)
	}
	if len(rep.Links.Devices) != 2 {
		t.Fatalf("links %+v; want two devices", rep.Links.Devices)
	}
	for _, d := range rep.Links.Devices {
		if d.NIC == nil || *d.NIC != 4096 || d.NVLink == nil || *d.NVLink != 0 || d.Unattributed != 0 || strings.Contains(strings.Join(d.LowerBound, ","), "NIC") {
			t.Errorf("device %d: NVLink %s, NIC %s, unattributed %d, lower bounds %q; want 0, 4096 (two hosts' NICs), 0, none on NIC",
				d.Device, fmtNs(d.NVLink), fmtNs(d.NIC), d.Unattributed, d.LowerBound)
		}
	}
}
