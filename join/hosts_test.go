package join

import (
	"strconv"
	"testing"

	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// The ranks' host names say where a collective runs when no topology does: ranks all on one host
// make a collective of no more ranks one host's (timeline.AuxOneHost: NVLink); ranks on two hosts,
// or a rank that named no host leave it unknown.
func TestOneHostFromRanksHosts(t *testing.T) {
	tests := []struct {
		name  string
		hosts []string
		ranks uint16
		want  bool
	}{
		{"three ranks on one host", []string{"node0", "node0", "node0"}, 3, true},
		{"ranks on two hosts", []string{"node0", "node0", "node1"}, 3, false},
		{"a rank that named no host", []string{"", ""}, 2, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := New(Config{})
			var mb *Member
			for r, h := range tc.hosts {
				var err error
				mb, err = j.Add("rank "+strconv.Itoa(r), &recordings.Meta{Extra: map[string]string{"nccl.rank": strconv.Itoa(r), "nccl.host": h, "nccl.pid": strconv.Itoa(100 + r)}})
				if err != nil {
					t.Fatal(err)
				}
			}
			e := timeline.Event{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Ranks: tc.ranks, Device: 0, Peer: -1, Comm: 1, Stream: 1, End: 10, Bytes: 1024}
			j.Event(mb, &e)
			if got := e.Aux&timeline.AuxOneHost != 0; got != tc.want {
				t.Errorf("one host %v; want %v", got, tc.want)
			}
		})
	}
}
