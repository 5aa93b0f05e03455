package kineto

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// emptyDir fails the test if dir holds a file: the import left a temporary file behind.
func emptyDir(t *testing.T, dir string) {
	t.Helper()
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Fatalf("%d temporary files left in %s (%s ...)", len(left), dir, left[0].Name())
	}
}

// traceInputs are the traces the sort tests read: the real ones when ../shared/data has them,
// and synthetic ones, in start order and shuffled.
func traceInputs(t *testing.T) map[string][]string {
	dir := t.TempDir()
	in := map[string][]string{
		"in order": {largeTrace(t, dir, 1000, 1)},
		"shuffled": {largeTrace(t, dir, 1000, 1<<20)},
		"blocks":   {largeTrace(t, dir, 1000, 64)},
	}
	syn := filepath.Join(dir, "syn.json")
	if err := os.WriteFile(syn, syntheticKineto(20), 0o644); err != nil {
		t.Fatal(err)
	}
	in["synthetic"] = []string{syn}
	r0, r1 := filepath.Join(data, "sampled_rank-0.json.gz"), filepath.Join(data, "sampled_rank-1.json.gz")
	if _, err := os.Stat(r0); err == nil {
		in["ranks"] = []string{r0, r1}
		if !raceEnabled { // the largest: ten times slower under the race detector
			in["resnet"] = []string{filepath.Join(data, "resnet50_v100_worker0.pt.trace.json.gz")}
		}
	}
	return in
}

// TestSortPathsAgree: the events come out the same, in the same order, with the same names and
// warnings, whether they are sorted in memory (the default buffer holds these traces whole) or
// by the external merge sort (a buffer of 8 items and merges of 2 runs at a time for the synthetic
// traces, 256 and 4 for the real ones, so that the runs are merged in several passes); a trace in
// start order is spilled as one run (the events wait for the file's end), a shuffled one as many,
// and no temporary file is left.
func TestSortPathsAgree(t *testing.T) {
	for name, paths := range traceInputs(t) {
		for _, like := range []bool{false, true} {
			want, err := ReadFiles(paths, Options{LikeHTA: like})
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			spilled := 0
			opts := Options{LikeHTA: like, TempDir: dir, reorder: 8, fanIn: 2, spilled: func(string) { spilled++ }}
			if name == "ranks" || name == "resnet" {
				opts.reorder, opts.fanIn = 256, 4
			}
			got, err := ReadFiles(paths, opts)
			if err != nil {
				t.Fatal(err)
			}
			emptyDir(t, dir)
			if !reflect.DeepEqual(got.Events, want.Events) || !reflect.DeepEqual(got.Strings.All(), want.Strings.All()) ||
				!reflect.DeepEqual(got.Warnings, want.Warnings) || got.Devices != want.Devices || got.EpochUnixNs != want.EpochUnixNs {
				t.Errorf("%s (like-hta %v): the external sort imports other events than the sort in memory (%d and %d events; warnings %q, %q)",
					name, like, len(got.Events), len(want.Events), got.Warnings, want.Warnings)
			}
			for i := 1; i < len(got.Events); i++ {
				if got.Events[i].Start < got.Events[i-1].Start {
					t.Fatalf("%s: event %d starts before the one before it", name, i)
				}
			}
			switch {
			case name == "in order" && spilled != 1:
				t.Errorf("%s: %d runs spilled; want one (the trace is in start order)", name, spilled)
			case name == "shuffled" && spilled < 100:
				t.Errorf("%s: %d runs spilled; want one per 16 or so events, and merges of them", name, spilled)
			}
		}
	}
}

// TestLargeTraceEvents: the synthetic trace imports as it was written: every event, kernels with
// their launch time (4 µs before they start, by correlation), steps and collectives.
func TestLargeTraceEvents(t *testing.T) {
	const n = 5000
	path := largeTrace(t, t.TempDir(), n, 1<<20)
	im, err := ReadFiles([]string{path}, Options{reorder: 64})
	if err != nil {
		t.Fatal(err)
	}
	count := map[timeline.Kind]int{}
	for _, e := range im.Events {
		count[e.Kind]++
		if (e.Kind == timeline.KindKernel || e.Kind == timeline.KindCollective) && e.Start-e.Queued != 4250 {
			t.Fatalf("kernel %+v: launched %d ns before it starts; want 4250", e, e.Start-e.Queued)
		}
	}
	want := map[timeline.Kind]int{timeline.KindRuntime: n, timeline.KindKernel: n - n/50, timeline.KindCollective: n / 50,
		timeline.KindStep: n / 1000, timeline.KindMemcpy: n - n/1000}
	if !reflect.DeepEqual(count, want) || len(im.Warnings) > 0 {
		t.Errorf("events by kind %v; want %v; warnings %q", count, want, im.Warnings)
	}
}

// TestTempFilesRemoved: the temporary files of the sort are removed when the import fails after
// spilling them: the sink refuses, the context is cancelled, a file is unreadable on its second
// reading.
func TestTempFilesRemoved(t *testing.T) {
	path := largeTrace(t, t.TempDir(), 3000, 1<<20)
	refused := errors.New("refused")
	tests := []struct {
		name string
		run  func(opts Options) error
		want error
	}{
		{"sink refuses", func(opts Options) error {
			_, err := Stream([]string{path}, opts, func(*Imported) error { return nil }, func([]timeline.Event) error { return refused })
			return err
		}, refused},
		{"sink refuses to begin", func(opts Options) error {
			_, err := Stream([]string{path}, opts, func(*Imported) error { return refused }, func([]timeline.Event) error { return nil })
			return err
		}, refused},
		{"cancelled while spilling", func(opts Options) error {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			opts.Context = ctx
			opts.spilled = func(string) { cancel() }
			_, err := ReadFiles([]string{path}, opts)
			return err
		}, context.Canceled},
		{"file gone on its second reading", func(opts Options) error {
			second := filepath.Join(t.TempDir(), "rank1.json")
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(second, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			opts.spilled = func(string) { os.Remove(second) } // while the first file is read into events
			_, err = ReadFiles([]string{path, second}, opts)
			return err
		}, os.ErrNotExist},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			err := tc.run(Options{TempDir: dir, reorder: 16})
			if !errors.Is(err, tc.want) {
				t.Fatalf("import = %v; want %v", err, tc.want)
			}
			emptyDir(t, dir)
		})
	}
}

// TestTruncated: a trace cut anywhere fails with an error naming the file and the byte offset,
// and leaves no temporary file.
func TestTruncated(t *testing.T) {
	var b bytes.Buffer
	if err := writeLargeTrace(&b, 200, 1<<20); err != nil {
		t.Fatal(err)
	}
	full := b.Bytes()
	dir := t.TempDir()
	for _, cut := range []int{1, 17, len(full) / 3, len(full) / 2, len(full) - 3} {
		_, err := Import("cut.json", bytes.NewReader(full[:cut]), Options{TempDir: dir, reorder: 8})
		if err == nil || !strings.HasPrefix(err.Error(), "cut.json: ") || !strings.Contains(err.Error(), "byte offset") {
			t.Errorf("Import(first %d bytes) = %v; want an error naming the file and the byte offset", cut, err)
		}
	}
	_, err := Import("cut.json", bytes.NewReader(full[:len(full)-3]), Options{})
	if want := "cut.json: the JSON ends before it is complete, at byte offset"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Import(cut at the end) = %v; want %q...", err, want)
	}
	emptyDir(t, dir)
}

// TestAgreesWithWholeImporter: the streaming import makes the same events, in the same order,
// with the same names, warnings, devices and time 0, as the importer that held every event until
// the end of its file did (legacy_test.go), on the real traces and the synthetic ones, with and
// without --like-hta (whose numbers, 14.95%/19.93% and 11.81%/20.05%, TestSampledRanksOverlapLikeHTA
// checks against HTA's).
func TestAgreesWithWholeImporter(t *testing.T) {
	for name, paths := range traceInputs(t) {
		for _, like := range []bool{false, true} {
			want, err := legacyReadFiles(paths, Options{LikeHTA: like})
			if err != nil {
				t.Fatal(err)
			}
			got, err := ReadFiles(paths, Options{LikeHTA: like})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Events, want.Events) || !reflect.DeepEqual(got.Strings.All(), want.Strings.All()) ||
				!reflect.DeepEqual(got.Warnings, want.Warnings) || got.Devices != want.Devices || got.EpochUnixNs != want.EpochUnixNs ||
				got.Format != want.Format || got.Source != want.Source {
				t.Errorf("%s (like-hta %v): %d events, %d devices, warnings %q; the whole-file importer: %d, %d, %q",
					name, like, len(got.Events), got.Devices, got.Warnings, len(want.Events), want.Devices, want.Warnings)
			}
		}
	}
}

// TestSorterDirect: once the buffer has overflowed, its items sorted make the first run, and the
// items that come in order go straight to that run (nothing waits in the buffer), those that come
// late wait there, and a buffer full of them is sorted into a run of its own; every item comes out
// once, in (start, seq) order, in each case.
func TestSorterDirect(t *testing.T) {
	const capacity = 4
	tests := []struct {
		name   string
		starts []int64
		direct int // items written straight to the first run, past the buffer
		runs   int
	}{
		{"in order", []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 5, 1},
		{"one late", []int64{1, 2, 3, 4, 5, 6, 7, 3, 8, 9}, 4, 2},
		{"late ones fill the buffer", []int64{1, 2, 3, 4, 5, 20, 6, 7, 8, 9, 10, 21, 22, 11}, 3, 3},
		{"shuffled from the start", []int64{5, 3, 1, 4, 2, 9, 7, 8, 6}, 1, 2},
		{"fits the buffer", []int64{3, 1, 2}, 0, 0},
	}
	for _, tc := range tests {
		sp := &spill{dir: t.TempDir(), fanIn: mergeFanIn}
		var got []item
		s := newSorter(capacity, sp, func(it *item) error { got = append(got, *it); return nil })
		var want []item
		direct := 0
		for i, st := range tc.starts {
			it := item{ev: timeline.Event{Start: st, End: st + 1}, seq: int64(i)}
			want = append(want, it)
			buffered := len(s.items)
			if err := s.put(&it); err != nil {
				t.Fatal(err)
			}
			if len(s.items) == buffered {
				direct++
			}
		}
		if direct != tc.direct {
			t.Errorf("%s: %d items written directly; want %d", tc.name, direct, tc.direct)
		}
		if err := s.finish(); err != nil {
			t.Fatal(err)
		}
		if runs := len(sp.made); runs != tc.runs {
			t.Errorf("%s: %d runs; want %d", tc.name, runs, tc.runs)
		}
		sp.close()
		slices.SortStableFunc(want, func(a, b item) int { return cmpInt(a.ev.Start, b.ev.Start) })
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: items out %v; want %v", tc.name, starts(got), starts(want))
		}
	}
}

func starts(its []item) []int64 {
	var s []int64
	for _, it := range its {
		s = append(s, it.ev.Start)
	}
	return s
}

// TestSortKeys: the radix sort puts keys in the order the comparison sort does, by start and then
// seq, on starts close together and far apart (past the radix sort's passes), negative ones, many
// of one start, and ties whose seqs came out of order (held slices join the buffer late).
func TestSortKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name string
		n    int
		span int64
		ties bool // seqs of equal starts out of order
	}{
		{"empty", 0, 10, false},
		{"one", 1, 10, false},
		{"one start", 500, 1, true},
		{"µs apart", 5000, 1 << 20, true},
		{"seconds apart", 5000, 1 << 40, false},
		{"days apart", 3000, 1 << 56, true},
		{"the whole range", 3000, maxTime, true},
	}
	for _, tc := range tests {
		keys := make([]sortKey, tc.n)
		for i := range keys {
			seq := int64(i)
			if tc.ties && rng.IntN(4) == 0 {
				seq = -int64(i) - 1 // a held slice's: before those in the buffer
			}
			start := rng.Int64N(tc.span)
			if tc.span == maxTime {
				start = rng.Int64N(2*maxTime-1) - (maxTime - 1)
			}
			if tc.ties && rng.IntN(3) == 0 && i > 0 {
				start = keys[rng.IntN(i)].start
			}
			keys[i] = sortKey{start: start, seq: seq, slot: i}
		}
		want := slices.Clone(keys)
		slices.SortFunc(want, cmpKey)
		got, other := sortKeys(slices.Clone(keys), make([]sortKey, len(keys)))
		if !slices.Equal(got, want) {
			t.Errorf("%s: sortKeys orders %d keys otherwise than the comparison sort", tc.name, len(keys))
		}
		if len(other) != len(keys) {
			t.Errorf("%s: the scratch half has %d keys; want %d", tc.name, len(other), len(keys))
		}
	}
}
