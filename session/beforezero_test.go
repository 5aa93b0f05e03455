package session

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// writeBeforeZero writes a closed recording of n kernels that all lie before time 0, as a console
// attached to a job that had already run records them, and returns its path.
func writeBeforeZero(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "attach.xfr")
	w, err := recordings.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteMeta(recordings.Meta{Source: "attach", Backend: "nccl", Topology: "unknown"}); err != nil {
		t.Fatal(err)
	}
	evs := make([]timeline.Event, n)
	for i := range evs {
		start := -int64(n-i) * 1000
		evs[i] = timeline.Event{Kind: timeline.KindKernel, Start: start, End: start + 500, Queued: start - 100, Peer: timeline.NoDevice, Stream: 1}
	}
	if err := w.WriteEvents(evs); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// A recording's events before time 0 are replayed from its beginning: the headless replay and the
// console's replay read every one (they read none, "no events"), and a seek past the recording's
// end, which is before 0, stands at that end with the recording whole.
func TestReplayBeforeTimeZero(t *testing.T) {
	const n = 50
	path := writeBeforeZero(t, n)
	for _, speed := range []float64{0, 1000} {
		got, err := Replay(context.Background(), ReplayConfig{Path: path, Speed: speed})
		if errors.Is(err, ErrNoEvents) || err != nil {
			t.Fatalf("Replay at speed %v: %v", speed, err)
		}
		if r := got.Report(); r.Events != n {
			t.Errorf("Replay at speed %v: %d events, want %d", speed, r.Events, n)
		}
	}
	rs, err := StartReplay(context.Background(), ReplayConfig{Path: path}, 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Stop()
	waitFor(t, "the console's replay done", rs.Done)
	if snap := rs.Snapshot(); snap.Total != n {
		t.Errorf("the console's replay: %d events, want %d", snap.Total, n)
	}
	gen := rs.Snapshot().Generation
	rs.SeekTo(int64(time.Second))
	waitFor(t, "the seek done", func() bool { return rs.Done() && rs.Snapshot().Generation != gen })
	if snap := rs.Snapshot(); snap.Total != n {
		t.Errorf("after a seek to 1 s: %d events, want the whole recording's %d", snap.Total, n)
	}
}
