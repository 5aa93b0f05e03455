package join

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

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

func mergeAll(t *testing.T, paths []string) ([]timeline.Event, *Merged) {
	t.Helper()
	m, err := MergeRecordings(paths, recordings.Options{}, 0)
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

// Each process's clock is placed on its wall-clock epoch, the earliest becoming time 0; the merge
// is in start order across files; ranks keep their devices, streams and hosts apart; peers are
// translated from communicator ranks to job ranks.
func TestMergeAlignsClocks(t *testing.T) {
	for _, c := range []struct {
		name       string
		epochs     [2]int64 // wall-clock ns of each rank's time 0
		at         [2]int64 // each rank's send, on its own clock
		wantStarts [2]int64 // the sends on the session's clock
		first      int32    // the rank whose send comes first in the merged stream
	}{
		{"same epoch", [2]int64{5e9, 5e9}, [2]int64{1000, 2000}, [2]int64{1000, 2000}, 0},
		{"rank 1 started 1 µs later", [2]int64{5e9, 5e9 + 1000}, [2]int64{3000, 1000}, [2]int64{3000, 2000}, 1},
		{"rank 1 started first", [2]int64{5e9 + 500, 5e9}, [2]int64{1000, 1000}, [2]int64{1500, 1000}, 1},
		{"far apart, a tie: the file given first", [2]int64{5e9, 9e9}, [2]int64{4e9 + 10, 10}, [2]int64{4e9 + 10, 4e9 + 10}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			// Job ranks 4 and 7 are communicator ranks 0 and 1; the files are given rank 7 first.
			devs, crs := [2]int32{4, 7}, [2]uint32{0, 1}
			var paths []string
			for i := 1; i >= 0; i-- {
				p := filepath.Join(dir, "rank"+strconv.Itoa(int(devs[i]))+".xfr")
				writeRank(t, p, rankFile{host: "node" + strconv.Itoa(i), pid: 100 + i, rank: strconv.Itoa(int(devs[i])), epoch: c.epochs[i],
					events: rankEvents(devs[i], crs[i], c.at[i])})
				paths = append(paths, p)
			}
			evs, m := mergeAll(t, paths)
			if got := m.Meta(); got.Devices != 8 || got.EpochUnixNs != min(c.epochs[0], c.epochs[1]) || got.Backend != "nccl" {
				t.Errorf("meta %+v: want 8 devices (ranks up to 7), the earliest epoch", got)
			}
			var sends []timeline.Event
			for i, e := range evs {
				if i > 0 && e.Start < evs[i-1].Start {
					t.Errorf("event %d starts at %d, before the one before it (%d): not merged by time", i, e.Start, evs[i-1].Start)
				}
				if e.Kind == timeline.KindSend {
					sends = append(sends, e)
				}
			}
			if len(sends) != 2 || sends[0].Device != devs[c.first] {
				t.Fatalf("sends %+v: want rank %d's first", sends, devs[c.first])
			}
			for _, s := range sends {
				i := slices.Index(devs[:], s.Device)
				other := devs[1-i]
				if s.Start != c.wantStarts[i] || s.Peer != other || s.Host != uint16(1-i) || s.Stream != uint32(s.Device)*StreamsPerRank+2 {
					t.Errorf("rank %d's send %+v: want start %d, peer %d (job rank), host %d (files in the order given), stream %d",
						s.Device, s, c.wantStarts[i], other, 1-i, uint32(s.Device)*StreamsPerRank+2)
				}
				if m.Strings().Lookup(evs[0].Label) != "comm world" {
					t.Errorf("label %q", m.Strings().Lookup(evs[0].Label))
				}
			}
		})
	}
}

// Bad inputs are refused, naming the file and what is wrong.
func TestMergeRefuses(t *testing.T) {
	dir := t.TempDir()
	good := func(name, host string, pid int, rank string) string {
		p := filepath.Join(dir, name)
		writeRank(t, p, rankFile{host: host, pid: pid, rank: rank, epoch: 1e9, events: rankEvents(0, 0, 10)})
		return p
	}
	r0 := good("rank0.xfr", "a", 1, "0")
	r1 := good("rank1.xfr", "a", 2, "1")
	again := good("rank0-again.xfr", "b", 3, "0")
	unknown := good("rank-unknown.xfr", "c", 4, "-1") // its first communicator says rank 0
	damaged := filepath.Join(dir, "damaged.xfr")
	data, err := os.ReadFile(r1)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(damaged, data, 0o644); err != nil {
		t.Fatal(err)
	}
	notRank := filepath.Join(dir, "sim.xfr")
	w, _ := recordings.Create(notRank)
	_ = w.WriteMeta(recordings.Meta{Source: "sim", EpochUnixNs: 1})
	_ = w.WriteEvents(rankEvents(1, 1, 5))
	_ = w.Close()
	for _, c := range []struct {
		name  string
		paths []string
		want  string
	}{
		{"two files of one rank", []string{r0, r1, again}, again + ": rank 0 again: " + r0 + " already is rank 0"},
		{"a rank told by its communicator", []string{r0, unknown}, unknown + ": rank 0 again: " + r0},
		{"one file given twice", []string{r0, r1, r0}, r0 + ": given twice"},
		{"a damaged file", []string{r0, damaged}, damaged + ": corrupt recording at byte offset"},
		{"not a rank's recording", []string{r0, notRank}, notRank + ": not a rank's recording from the NCCL profiler plugin"},
		{"a missing file", []string{r0, filepath.Join(dir, "none.xfr")}, "none.xfr: no such file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := MergeRecordings(c.paths, recordings.Options{}, 0)
			if err == nil {
				for m.Next() {
				}
				err = m.Err()
				m.Close()
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("MergeRecordings(%v) = %v; want an error containing %q", c.paths, err, c.want)
			}
		})
	}
}
