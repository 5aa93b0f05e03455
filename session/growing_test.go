package session

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// growingRecording is a recording written by the test while a replay follows it.
type growingRecording struct {
	t    *testing.T
	path string
	w    *recordings.Writer
	g    *recordings.Growth
	next int64 // the next event's start
}

func newGrowing(t *testing.T) *growingRecording {
	t.Helper()
	path := filepath.Join(t.TempDir(), "import.xfr")
	w, err := recordings.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return &growingRecording{t: t, path: path, w: w, g: recordings.NewGrowth()}
}

// begin writes the description and a label, and publishes them.
func (gr *growingRecording) begin() {
	gr.t.Helper()
	if err := gr.w.WriteMeta(recordings.Meta{Source: "nsys", Backend: "nsys", Devices: 2}); err != nil {
		gr.t.Fatal(err)
	}
	if err := gr.w.WriteStrings(1, []string{"gemm"}); err != nil {
		gr.t.Fatal(err)
	}
	if err := gr.w.Publish(gr.g); err != nil {
		gr.t.Fatal(err)
	}
}

// add writes and publishes n kernels, 1 µs apart, and returns when the last one ends.
func (gr *growingRecording) add(n int) int64 {
	gr.t.Helper()
	evs := make([]timeline.Event, n)
	for i := range evs {
		evs[i] = timeline.Event{Kind: timeline.KindKernel, Start: gr.next, End: gr.next + 800, Device: int32(i % 2), Peer: -1, Label: 1, Queued: -1}
		gr.next += 1000
	}
	if err := gr.w.WriteEvents(evs); err != nil {
		gr.t.Fatal(err)
	}
	if err := gr.w.Publish(gr.g); err != nil {
		gr.t.Fatal(err)
	}
	return evs[n-1].End
}

// waitFor polls until cond holds; the bound only keeps a broken replay from hanging the test.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}

// TestReplayGrowing: a replay of a recording still being written shows its events as they are
// published, before the writer is done; seeks within what is written (a seek past it stops at
// its end); learns the description from the first chunk; is done only once the writer ended;
// and stops cleanly mid-way (TestMain checks that no goroutine is left).
func TestReplayGrowing(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, gr *growingRecording, rs *ReplaySource)
	}{
		{"plays as it grows", func(t *testing.T, gr *growingRecording, rs *ReplaySource) {
			if m, _ := rs.Description(); m.Backend != "" || rs.Snapshot().Total != 0 {
				t.Fatalf("before the first chunk: meta %+v, %d events", m, rs.Snapshot().Total)
			}
			gr.begin()
			end := gr.add(1000)
			waitFor(t, "the first 1,000 events shown", func() bool { return rs.Snapshot().Total == 1000 })
			if m, length := rs.Description(); m.Backend != "nsys" || length != end || rs.Done() {
				t.Fatalf("meta %+v, length %d (want %d), done %v", m, length, end, rs.Done())
			}
			gr.add(1000)
			waitFor(t, "2,000 events shown", func() bool { return rs.Snapshot().Total == 2000 })
			if rs.Done() {
				t.Fatal("done while the recording is still being written")
			}
			if err := gr.w.Close(); err != nil {
				t.Fatal(err)
			}
			gr.g.End(nil)
			waitFor(t, "done once the writer ended", rs.Done)
			if s := rs.Snapshot(); s.Total != 2000 || rs.Err() != nil {
				t.Fatalf("%d events, err %v", s.Total, rs.Err())
			}
		}},
		{"seeks within what is written", func(t *testing.T, gr *growingRecording, rs *ReplaySource) {
			gr.begin()
			end := gr.add(2000)
			waitFor(t, "2,000 events shown", func() bool { return rs.Snapshot().Total == 2000 })
			gen := rs.Snapshot().Generation
			rs.SeekTo(1_000_000) // event 1,000 ends at 1,000,800
			waitFor(t, "the seek's generation", func() bool { s := rs.Snapshot(); return s.Generation > gen && s.Total == 1000 })
			first := rs.Snapshot().Chunks[0][0]
			if first.End < 1_000_000 || first.Start != 1_000_000 {
				t.Fatalf("after seeking to 1 ms, the first event is %+v", first)
			}
			gen = rs.Snapshot().Generation
			rs.SeekTo(end + 1e9) // past what is written: its end
			waitFor(t, "the seek past the end", func() bool { s := rs.Snapshot(); return s.Generation > gen && s.Total > 0 })
			if s := rs.Snapshot(); s.Now != end || s.Total != 1 {
				t.Fatalf("after seeking past the end: now %d (want %d), %d events", s.Now, end, s.Total)
			}
			gr.add(10) // and it plays on as the recording grows
			waitFor(t, "events written after the seek", func() bool { return rs.Snapshot().Total == 11 })
		}},
		{"stops mid-way", func(t *testing.T, gr *growingRecording, rs *ReplaySource) {
			gr.begin()
			gr.add(100)
			waitFor(t, "100 events shown", func() bool { return rs.Snapshot().Total == 100 })
			// Stop (below) while the replay waits for more.
		}},
		{"ends before its first chunk", func(t *testing.T, gr *growingRecording, rs *ReplaySource) {
			gr.g.End(errors.New("not an export"))
			waitFor(t, "done", rs.Done)
			if rs.Snapshot().Total != 0 || rs.Err() != nil {
				t.Fatalf("%d events, err %v", rs.Snapshot().Total, rs.Err())
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gr := newGrowing(t)
			rs, err := StartReplay(context.Background(), ReplayConfig{Path: gr.path, Growth: gr.g}, 1<<16)
			if err != nil {
				t.Fatal(err)
			}
			defer rs.Stop()
			tc.run(t, gr, rs)
		})
	}
}

// TestSeekToEndIsDone: a seek to just before the end of a recording replays the rest and is done,
// however soon that rest is played: a seek never leaves the replay marked as running for ever.
func TestSeekToEndIsDone(t *testing.T) {
	gr := newGrowing(t)
	gr.begin()
	end := gr.add(100)
	if err := gr.w.Close(); err != nil {
		t.Fatal(err)
	}
	rs, err := StartReplay(context.Background(), ReplayConfig{Path: gr.path}, 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Stop()
	waitFor(t, "the first replay done", rs.Done)
	for i := range 500 {
		rs.SeekTo(end - 1)
		waitFor(t, fmt.Sprintf("seek %d done", i), rs.Done)
	}
}

// A seek past the end of a recording stands at its end: the replay is done, and the window holds
// what ends there, starting there (it held nothing and stood at time 0).
func TestSeekPastTheEndStopsThere(t *testing.T) {
	gr := newGrowing(t)
	gr.begin()
	end := gr.add(100)
	if err := gr.w.Close(); err != nil {
		t.Fatal(err)
	}
	rs, err := StartReplay(context.Background(), ReplayConfig{Path: gr.path}, 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Stop()
	waitFor(t, "the first replay done", rs.Done)
	gen := rs.Snapshot().Generation
	rs.SeekTo(end + 1_000_000_000)
	waitFor(t, "the seek done", func() bool { return rs.Done() && rs.Snapshot().Generation != gen })
	if snap := rs.Snapshot(); snap.Now != end || snap.From != end || snap.Total == 0 {
		t.Errorf("after a seek 1 s past the end (%d): now %d, from %d, %d events; want the end, with what ends there",
			end, snap.Now, snap.From, snap.Total)
	}
}
