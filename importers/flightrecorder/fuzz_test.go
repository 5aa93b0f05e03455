package flightrecorder

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// FuzzDecode: any bytes decode to a dump or an error, never a panic, and a dump's process groups
// hold interned rank lists that agree with themselves (the sorted copy is the list sorted), shared
// by every dump of the import that carries the same list.
func FuzzDecode(f *testing.F) {
	// Hand-made dumps, then a real job's (torch 2.11: pickle and JSON, one rank and two).
	dirs := []string{"testdata/hang", "testdata/mismatch_json", "testdata/pp_hang", realJob + "/torch/fr", realJob + "/torch2/fr"}
	for _, dir := range dirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte(`{"pg_config": {"0": {"ranks": "[3, 1, 2]"}, "1": {"ranks": [1, 2, 3]}}, "entries": []}`))
	for _, shape := range containerShapes { // empty containers, left as such until filled or memoized
		f.Add(containerPickle(shape, 30))
	}
	// Entries each wrong in one way: left out, or kept with a note (W7, W8).
	f.Add([]byte(`{"pg_config": {}, "entries": [{"profiling_name": "nccl:all_reduce", "collective_seq_id": "abc", "state": "completed"},` +
		`{"profiling_name": "nccl:all_reduce", "collective_seq_id": 1, "state": "completed", "input_sizes": [[1e30]], "input_dtypes": ["Bogus"], "time_created_ns": -1},` +
		`{"collective_seq_id": 2, "state": "completed"}, 7]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		sets := newRankSets()
		d, err := decode(b, sets)
		if err != nil {
			return
		}
		if len(d.notes) > maxNotes {
			t.Errorf("%d notes; want at most %d (the rest counted)", len(d.notes), maxNotes)
		}
		again, err := decode(b, sets)
		if err != nil {
			t.Fatalf("decoded once, not twice: %v", err)
		}
		for name, pc := range d.pgs {
			if pc.set == nil {
				continue
			}
			want := slices.Clone(pc.ranks)
			slices.Sort(want)
			if !slices.Equal(pc.set.sorted, want) {
				t.Errorf("group %s: sorted %v; want %v", name, pc.set.sorted, want)
			}
			for _, r := range pc.ranks {
				if !pc.set.has(r) {
					t.Errorf("group %s: rank %d of its list not in its set", name, r)
				}
			}
			if again.pgs[name].set != pc.set {
				t.Errorf("group %s: the same list decoded twice is held twice", name)
			}
		}
	})
}
