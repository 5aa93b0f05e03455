package ui

import (
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// partialSource is a finished import of a 2-rank job of which one rank's log is missing: a
// complete all_gather (both parts, as if the other rank's log had it) and an all_reduce of 1 GiB
// that only rank 0 reported.
func partialSource(done bool) *fakeSource {
	coll := func(c timeline.CollOp, dev int32, op uint64, start, end, bytes int64) timeline.Event {
		return timeline.Event{Kind: timeline.KindCollective, Sub: uint8(c), Ranks: 2, Device: dev, Peer: timeline.NoDevice, Stream: 1,
			Op: op, Start: start, End: end, Bytes: bytes, Queued: -1}
	}
	evs := []timeline.Event{
		coll(timeline.CollAllGather, 0, 1, 0, 200_000, 16<<20),
		coll(timeline.CollAllGather, 1, 1, 1_000, 201_000, 16<<20),
		coll(timeline.CollAllReduce, 0, 2, 300_000, 10_300_000, 1<<30),
	}
	win := timeline.NewWindow(1<<16, nil)
	for i := range evs {
		win.Emit(&evs[i])
	}
	meta := timeline.Meta{Source: "nccl-inspector", Backend: "nccl-inspector", Devices: 2}
	return &fakeSource{win: win, info: SourceInfo{Name: "inspector", Meta: meta}, status: Status{Speed: 1, Done: done}}
}

// The transfers view shows a collective some rank never reported as a row once the source has
// ended, with the ranks seen of those expected and the figures of those ranks as bounds (rank 0's
// 1 GiB in 10.0 ms: time ≥ 10.0 ms, rates ≤ 107.4 GB/s, all_reduce's bus factor over 2 ranks
// being 1), not only as a count; while the source still runs, an instance waiting for its other
// ranks is not a row yet.
func TestTransfersPartialCollective(t *testing.T) {
	m := sized(partialSource(true), 160, 40)
	press(m, "3")
	got := text(m)
	var row string
	for _, l := range strings.Split(got, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "all_reduce") {
			row = l
		}
	}
	if !strings.Contains(row, " 1/2 ") || !strings.HasSuffix(strings.TrimRight(row, " "), "≥ 10.0 ms  ≥ 10.0 ms  ≤ 107.4  ≤ 107.4") {
		t.Errorf("the partial all_reduce row is %q; want ranks 1/2 and ≥ 10.0 ms, ≥ 10.0 ms, ≤ 107.4, ≤ 107.4 for p50, p99, GB/s and busbw:\n%s", row, got)
	}
	if !strings.Contains(got, "ranks 1/2: seen of expected") {
		t.Errorf("the footer does not say what 1/2 means:\n%s", got)
	}
	m = sized(partialSource(false), 160, 40)
	press(m, "3")
	if got := text(m); strings.Contains(got, "1/2") {
		t.Errorf("a running source shows an open instance as a partial row:\n%s", got)
	}
}
