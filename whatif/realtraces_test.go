package whatif

import (
	"os"
	"path/filepath"
	"testing"

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
