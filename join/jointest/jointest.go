// Package jointest writes the per-rank recordings the NCCL profiler plugin writes, for the tests of
// the join and of its users (attach): one place for what such a file holds.
package jointest

import (
	"errors"
	"strconv"
	"testing"

	"github.com/xfertop/xfertop/join"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// RankFile is one rank's recording as the plugin writes it: its meta (host, pid, rank, its clock's
// wall-clock epoch), its labels, and its events on its own clock.
type RankFile struct {
	Host   string
	PID    int
	Rank   string // nccl.rank as written ("-1": not known yet)
	Epoch  int64
	Events []timeline.Event
	// How the rank's run ended: its Outcome's "ended" ("" when it did not end early), the events
	// its plugin dropped, and NoOutcome for a file whose process died before writing its Outcome.
	Ended     string
	Dropped   int64
	NoOutcome bool
}

// Meta is the recording meta the plugin writes for f.
func (f RankFile) Meta() recordings.Meta {
	return recordings.Meta{Source: "nccl profiler plugin", Backend: "nccl", Topology: "unknown", IdleMode: timeline.IdleEngine,
		EpochUnixNs: f.Epoch, Writer: "xfertop nccl profiler plugin",
		Extra: map[string]string{"nccl.host": f.Host, "nccl.pid": strconv.Itoa(f.PID), "nccl.rank": f.Rank}}
}

// Labels are the labels RankEvents refer to (id 1 on).
var Labels = []string{"comm world"}

// RankEvents is what a plugin folds for rank dev (communicator rank cr of 2 in communicator 9):
// its communicator init, a send to the other rank at t, and a collective at t+100.
func RankEvents(dev int32, cr uint32, t int64) []timeline.Event {
	return []timeline.Event{
		{Kind: timeline.KindCommInit, Start: 1, End: 1, Device: dev, Comm: 9, Aux: cr, Ranks: 2, Label: 1, Peer: -1, Queued: -1},
		{Kind: timeline.KindSend, Start: t, End: t + 50, Device: dev, Peer: int32(1 - cr), Comm: 9, Stream: 2, Bytes: 64, Op: 7, Queued: -1},
		{Kind: timeline.KindCollective, Start: t + 100, End: t + 200, Device: dev, Peer: -1, Comm: 9, Stream: 1, Bytes: 1024, Op: 8,
			Ranks: 2, Sub: uint8(timeline.CollAllReduce), Queued: -1},
	}
}

// WriteRank writes f as a recording at path.
func WriteRank(t testing.TB, path string, f RankFile) {
	t.Helper()
	w, err := recordings.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	err = errors.Join(w.WriteMeta(f.Meta()), w.WriteStrings(1, Labels), w.WriteEvents(f.Events), w.WriteDropped(f.Dropped))
	if !f.NoOutcome {
		err = errors.Join(err, w.WriteOutcome([][2]string{{"ended", f.Ended}}))
	}
	err = errors.Join(err, w.Close())
	if err != nil {
		t.Fatal(err)
	}
}

// MergeAll merges the recordings at paths and returns every event, in the merge's order.
func MergeAll(t testing.TB, paths []string) ([]timeline.Event, *join.Merged) {
	t.Helper()
	m, err := join.MergeRecordings(paths, recordings.Options{})
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
