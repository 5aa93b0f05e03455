package whatif

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/xfertop/xfertop/depgraph"
	"github.com/xfertop/xfertop/importers"
	"github.com/xfertop/xfertop/timeline"
)

// sharedData is where the project's real traces are (see its README); tests skip without it.
const sharedData = "../../shared/data"

type collect struct {
	h   *importers.Header
	evs []timeline.Event
}

func (c *collect) Begin(h *importers.Header) error { c.h = h; return nil }
func (c *collect) Events(b []timeline.Event) error { c.evs = append(c.evs, b...); return nil }

// On every real trace, the replay with nothing changed puts each step's end within 5% of where it
// was measured (it is exact: no real trace records its collectives' sizes, so they keep their
// measured time); and halving every kernel moves no op later (the replay is monotone in the
// durations: a step may still lengthen, when its start moves earlier more than its end).
func TestRealTraces(t *testing.T) {
	for _, name := range []string{"kineto/resnet50_v100_worker0.pt.trace.json.gz", "kineto/sampled_rank-0.json.gz", "nsys/mfu_2gpu_after.sqlite"} {
		t.Run(filepath.Base(name), func(t *testing.T) {
			path := filepath.Join(sharedData, name)
			if _, err := os.Stat(path); err != nil {
				t.Skipf("%s: %v (the project's real traces are not here)", path, err)
			}
			c := &collect{}
			if _, err := importers.Stream([]string{path}, importers.Options{}, c); err != nil {
				t.Fatal(err)
			}
			w, err := Run(c.evs, c.h.Strings, Options{Scale: map[string]float64{"*": 0.5}})
			if err != nil {
				t.Fatal(err)
			}
			before := w.Before
			base := w.Graph.CriticalPaths(w.Baseline.Times, w.Baseline.Weight)
			for i := range before {
				m, b := before[i].EndNs-before[i].StartNs, base[i].EndNs-base[i].StartNs
				if d := float64(b-m) / float64(m); d > 0.05 || d < -0.05 {
					t.Errorf("step %d: replayed %d ns; measured %d (%.1f%%)", i, b, m, 100*d)
				}
			}
			for p, tm := range w.Changed.Times {
				if tm > w.Graph.Time[p] {
					t.Fatalf("point %d: halving the kernels moved it later, to %d ns from %d", p, tm, w.Graph.Time[p])
				}
			}
			if w.Changed.Scaled == 0 {
				t.Error("no kernel was scaled")
			}
		})
	}
}

// On the ResNet-50 trace the host's last launch and the GPU's last kernel end steps within less
// than 1% of the compute: scaling every kernel by a hair moves whole steps' compute on or off the
// critical path while the step times barely move (docs/whatif.md, "The replay"). As measured,
// steps 0, 3 and 5 have compute on their paths; ×1.01 adds steps 1 and 4 (step 2, starting when
// the longer step 1 ends, stays the host's); ×0.99 takes it off every step; no step's time moves by
// more than 0.6 ms.
func TestResNetScaleByAHair(t *testing.T) {
	path := filepath.Join(sharedData, "kineto/resnet50_v100_worker0.pt.trace.json.gz")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s: %v (the project's real traces are not here)", path, err)
	}
	c := &collect{}
	if _, err := importers.Stream([]string{path}, importers.Options{}, c); err != nil {
		t.Fatal(err)
	}
	withCompute := func(ps []depgraph.Path) []int {
		var out []int
		for i, p := range ps {
			if p.ByCategory[depgraph.CatCompute] > 0 {
				out = append(out, i)
			}
		}
		return out
	}
	for _, tc := range []struct {
		scale             float64
		measured, changed []int
	}{
		{1.01, []int{0, 3, 5}, []int{0, 1, 3, 4, 5}},
		{0.99, []int{0, 3, 5}, nil},
	} {
		t.Run(fmt.Sprint(tc.scale), func(t *testing.T) {
			w, err := Run(c.evs, c.h.Strings, Options{Scale: map[string]float64{"*": tc.scale}})
			if err != nil {
				t.Fatal(err)
			}
			if got := withCompute(w.Before); !slices.Equal(got, tc.measured) {
				t.Errorf("measured steps with compute on their critical path: %v; want %v", got, tc.measured)
			}
			if got := withCompute(w.After); !slices.Equal(got, tc.changed) {
				t.Errorf("×%v: steps with compute on their critical path: %v; want %v", tc.scale, got, tc.changed)
			}
			if len(w.After) != len(w.Before) {
				t.Fatalf("%d steps replayed; %d measured", len(w.After), len(w.Before))
			}
			for i := range w.Before {
				m, b := w.Before[i].EndNs-w.Before[i].StartNs, w.After[i].EndNs-w.After[i].StartNs
				if d := b - m; d > 600_000 || d < -600_000 {
					t.Errorf("×%v: step %d moved by %d ns (measured %d ns); want within 0.6 ms", tc.scale, i, d, m)
				}
			}
		})
	}
}
