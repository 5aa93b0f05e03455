package join_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/join"
	"github.com/xfertop/xfertop/join/jointest"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

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
				jointest.WriteRank(t, p, jointest.RankFile{Host: "node" + strconv.Itoa(i), PID: 100 + i, Rank: strconv.Itoa(int(devs[i])), Epoch: c.epochs[i],
					Events: jointest.RankEvents(devs[i], crs[i], c.at[i])})
				paths = append(paths, p)
			}
			evs, m := jointest.MergeAll(t, paths)
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
				if s.Start != c.wantStarts[i] || s.Peer != other || s.Host != uint16(1-i) || s.Stream != uint32(s.Device)*join.StreamsPerRank+2 {
					t.Errorf("rank %d's send %+v: want start %d, peer %d (job rank), host %d (files in the order given), stream %d",
						s.Device, s, c.wantStarts[i], other, 1-i, uint32(s.Device)*join.StreamsPerRank+2)
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
		jointest.WriteRank(t, p, jointest.RankFile{Host: host, PID: pid, Rank: rank, Epoch: 1e9, Events: jointest.RankEvents(0, 0, 10)})
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
	_ = w.WriteEvents(jointest.RankEvents(1, 1, 5))
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
			m, err := join.MergeRecordings(c.paths, recordings.Options{})
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

// The merge's outcome is one recording's: how the job ended, from each rank's, and the events
// every rank's plugin dropped, summed.
func TestMergeOutcome(t *testing.T) {
	for _, c := range []struct {
		name    string
		ranks   []jointest.RankFile // Host, PID, Rank and Events are filled in
		ended   string              // "{}" stands for the directory
		dropped int64
	}{
		{"every rank ended normally", []jointest.RankFile{{}, {Dropped: 4}}, "", 4},
		{"one ended early", []jointest.RankFile{{Dropped: 2}, {Ended: "watchdog: stuck", Dropped: 3}},
			"rank 1 ({}/rank1.xfr): watchdog: stuck", 5},
		{"two ended early, one not closed", []jointest.RankFile{{}, {Ended: "interrupted by SIGTERM"}, {NoOutcome: true}, {Ended: "watchdog: stuck"}},
			"rank 1 ({}/rank1.xfr): interrupted by SIGTERM (and 2 other ranks did not end normally)", 0},
		{"only one not closed", []jointest.RankFile{{NoOutcome: true}, {}},
			"rank 0 ({}/rank0.xfr): the recording was not closed (the rank did not finish)", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			var paths []string
			for i, f := range c.ranks {
				p := filepath.Join(dir, "rank"+strconv.Itoa(i)+".xfr")
				f.Host, f.PID, f.Rank, f.Epoch = "h", 100+i, strconv.Itoa(i), 1e9
				f.Events = jointest.RankEvents(int32(i), uint32(i), 10)
				jointest.WriteRank(t, p, f)
				paths = append(paths, p)
			}
			_, m := jointest.MergeAll(t, paths)
			want := [][2]string{{"ended", strings.ReplaceAll(c.ended, "{}", dir)}}
			if got := m.Outcome(); !slices.Equal(got, want) || m.Dropped() != c.dropped {
				t.Errorf("Outcome() = %q, Dropped() = %d; want %q, %d", got, m.Dropped(), want, c.dropped)
			}
		})
	}
}
