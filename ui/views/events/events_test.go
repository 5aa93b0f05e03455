package events

import (
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// The log's `/` search matches a line's text: a collective's or transfer's label (NCCL's choice,
// a call's profiler tag) must be in it, since their titles leave it out.
func TestLineShowsTransferLabels(t *testing.T) {
	snap := &timeline.Snapshot{Strings: []string{"", "RING SIMPLE 2ch tag 42", "Send tag 7", "stage1 fwd"}}
	tests := []struct {
		ev   timeline.Event
		want string
	}{
		{timeline.Event{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Label: 1, End: 10}, "all_reduce · RING SIMPLE 2ch tag 42"},
		{timeline.Event{Kind: timeline.KindSend, Peer: 3, Label: 2, End: 10}, "send → 3 · Send tag 7"},
		// A peer the source does not name (NCCL Inspector's .prom, a receive without p2p_peer).
		{timeline.Event{Kind: timeline.KindSend, Peer: timeline.NoDevice, Label: 2, End: 10}, "send → unknown · Send tag 7"},
		{timeline.Event{Kind: timeline.KindRecv, Peer: timeline.NoDevice, End: 10}, "recv ← unknown"},
		{timeline.Event{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), End: 10}, "all_reduce"},
		{timeline.Event{Kind: timeline.KindKernel, Label: 3, End: 10}, "stage1 fwd"},
	}
	for _, tt := range tests {
		got := line(snap, &tt.ev)
		if !strings.HasSuffix(got, "  "+tt.want) {
			t.Errorf("line(%+v) = %q; want it to end in %q", tt.ev, got, tt.want)
		}
		if r := runningLine(snap, &tt.ev, 5); !strings.Contains(r, "  "+tt.want+" (") {
			t.Errorf("runningLine(%+v) = %q; want %q in it", tt.ev, r, tt.want)
		}
	}
}

// The log shows an op of unknown time (timeline.AuxTimeUnknown) with "—" for its duration, never
// "0 s".
func TestLineUnknownTime(t *testing.T) {
	snap := &timeline.Snapshot{Strings: []string{""}}
	e := timeline.Event{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Start: 1_500_000_000, End: 1_500_000_000, Aux: timeline.AuxTimeUnknown}
	got := line(snap, &e)
	if strings.Contains(got, " 0 s ") || !strings.Contains(got, " — ") {
		t.Errorf("line = %q; want — for its duration, no 0 s", got)
	}
	e.Aux = 0
	if got := line(snap, &e); !strings.Contains(got, " 0 s ") {
		t.Errorf("line of a known 0-length op = %q; want 0 s", got)
	}
}
