package kineto

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// realJob holds the Kineto traces of a real job (torch 2.11, NCCL 2.28.9, an H200;
// importers/testdata/realjob/…/README.md): 3 iterations, one ProfilerStep#N each, per rank.
const realJob = "../testdata/realjob/h200-torch2.11-nccl2.28.9"

// TestRealJobSteps: a real trace writes each ProfilerStep#N twice, as the CPU's user_annotation
// and as its copy on the GPU's timeline (gpu_user_annotation); the steps are the CPU's, once each:
// 3 on one rank, 3 of each rank on two (a step of each rank, merged into the job's by number).
func TestRealJobSteps(t *testing.T) {
	for _, c := range []struct {
		files []string
		ranks int
	}{
		{[]string{"torch/kineto-rank0.json.gz"}, 1},
		{[]string{"torch2/kineto-rank0.json.gz", "torch2/kineto-rank1.json.gz"}, 2},
	} {
		t.Run(c.files[0], func(t *testing.T) {
			var paths []string
			for _, f := range c.files {
				paths = append(paths, filepath.Join(realJob, f))
			}
			im, err := ReadFiles(paths, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var steps []uint32
			for _, e := range im.Events {
				if e.Kind == timeline.KindStep {
					steps = append(steps, e.Aux)
				}
			}
			slices.Sort(steps)
			var want []uint32
			for n := range uint32(3) {
				for range c.ranks {
					want = append(want, n)
				}
			}
			if !slices.Equal(steps, want) {
				t.Errorf("steps %v; want %v (ProfilerStep#0-2, once per rank)", steps, want)
			}
		})
	}
}
