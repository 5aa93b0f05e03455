package attach

import (
	"cmp"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xfertop/xfertop/join"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// rankFile is one rank's recording as the plugin writes it: its meta (host, pid, rank, its clock's
// wall-clock epoch), its labels, and its events on its own clock.
type rankFile struct {
	host   string
	pid    int
	rank   string // nccl.rank as written ("-1": not known yet)
	epoch  int64
	events []timeline.Event
}

// rankEvents is what a plugin folds for rank dev (communicator rank cr of 2 in communicator 9):
// its communicator init, a send to the other rank at t, and a collective at t+100.
func rankEvents(dev int32, cr uint32, t int64) []timeline.Event {
	return []timeline.Event{
		{Kind: timeline.KindCommInit, Start: 1, End: 1, Device: dev, Comm: 9, Aux: cr, Ranks: 2, Label: 1, Peer: -1, Queued: -1},
		{Kind: timeline.KindSend, Start: t, End: t + 50, Device: dev, Peer: int32(1 - cr), Comm: 9, Stream: 2, Bytes: 64, Op: 7, Queued: -1},
		{Kind: timeline.KindCollective, Start: t + 100, End: t + 200, Device: dev, Peer: -1, Comm: 9, Stream: 1, Bytes: 1024, Op: 8,
			Ranks: 2, Sub: uint8(timeline.CollAllReduce), Queued: -1},
	}
}

func writeRank(t *testing.T, path string, f rankFile) {
	t.Helper()
	w, err := recordings.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	err = errors.Join(
		w.WriteMeta(recordings.Meta{Source: "nccl profiler plugin", Backend: "nccl", Topology: "unknown", IdleMode: timeline.IdleEngine,
			EpochUnixNs: f.epoch, Writer: "xfertop nccl profiler plugin",
			Extra: map[string]string{"nccl.host": f.host, "nccl.pid": strconv.Itoa(f.pid), "nccl.rank": f.rank}}),
		w.WriteStrings(1, []string{"comm world"}),
		w.WriteEvents(f.events),
		w.WriteOutcome([][2]string{{"ended", ""}}),
		w.Close())
	if err != nil {
		t.Fatal(err)
	}
}

func mergeAll(t *testing.T, paths []string) ([]timeline.Event, *join.Merged) {
	t.Helper()
	m, err := join.MergeRecordings(paths, recordings.Options{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var out []timeline.Event
	for m.Next() {
		out = append(out, m.At()...)
	}
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	return out, m
}

// A live attach and a merge of the same ranks' recordings are one truth: the same events.
func TestMergeEqualsAttach(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	sockDir, err := os.MkdirTemp("", "xa")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	epoch := int64(7e9)
	files := []rankFile{
		{host: "h", pid: 1, rank: "0", epoch: epoch + 300, events: rankEvents(0, 0, 1000)},
		{host: "h", pid: 2, rank: "1", epoch: epoch + 100, events: rankEvents(1, 1, 1500)},
	}
	var paths []string
	for i, f := range files {
		p := filepath.Join(dir, "rank"+strconv.Itoa(i)+".xfr")
		writeRank(t, p, f)
		paths = append(paths, p)
	}
	merged, _ := mergeAll(t, paths)

	// The same streams, sent to a console whose time 0 is the earliest rank's.
	k := &sink{}
	srv, err := Start(context.Background(), Config{Addr: Addr{"unix", filepath.Join(sockDir, "s")}, Epoch: epoch + 100}, k)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		c, err := Dial(srv.Addr(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		w, _ := recordings.NewStreamWriter("test", c)
		err = errors.Join(w.WriteMeta(recordings.Meta{EpochUnixNs: f.epoch,
			Extra: map[string]string{"nccl.host": f.host, "nccl.pid": strconv.Itoa(f.pid), "nccl.rank": f.rank}}),
			w.WriteStrings(1, []string{"comm world"}), w.WriteEvents(f.events), w.Close())
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for !srv.Quiet(50*time.Millisecond) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	srv.Close()
	live := k.evs
	order := func(a, b timeline.Event) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.Device, b.Device), cmp.Compare(a.Kind, b.Kind))
	}
	slices.SortFunc(live, order)
	slices.SortFunc(merged, order)
	if !slices.Equal(live, merged) {
		t.Errorf("attach received\n%+v\nthe merge of the recordings gave\n%+v", live, merged)
	}
}
