package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/whatif/synth"
)

// whatifWholeCases are what-ifs whose --json comparison was written by the whole-trace command
// (every op of the trace in one graph: whatif.Run, A analysed as analyze does, the unchanged
// replay on the recording's own topology and its report giving each row's floor) into
// testdata/whatif_whole: real traces, the small HTA trace, and synthetic jobs of one and two ranks
// whose GPUs run behind their hosts, with all-reduces re-timed by the NCCL model, their steps
// marked or inferred.
var whatifWholeCases = []struct {
	name  string
	synth *synth.Shape // the trace is written; else inputs are paths
	in    []string
	args  []string
}{
	{name: "hta_small", in: []string{"testdata/hta_small.json"}, args: []string{"--scale-kernel", "*=0.5"}},
	{name: "resnet50", in: []string{"kineto/resnet50_v100_worker0.pt.trace.json.gz"}, args: []string{"--scale-kernel", "*=0.5"}},
	{name: "resnet50-unchanged", in: []string{"kineto/resnet50_v100_worker0.pt.trace.json.gz"}},
	{name: "sampled-2ranks", in: []string{"kineto/sampled_rank-0.json.gz", "kineto/sampled_rank-1.json.gz"}, args: []string{"--scale-kernel", "*=0.5"}},
	{name: "mfu_2gpu_after", in: []string{"nsys/mfu_2gpu_after.sqlite"}, args: []string{"--scale-kernel", "*=0.5"}},
	{name: "synth-2ranks", synth: &synth.Shape{Ranks: 2, Steps: 12, Ops: 96, Seed: 1}, args: []string{"--topology", "h100x8", "--scale-kernel", "*=0.5"}},
	{name: "synth-2ranks-hosts", synth: &synth.Shape{Ranks: 2, Steps: 12, Ops: 96, Seed: 1}, args: []string{"--topology", "h100x8", "--hosts", "2", "--comm", "algo=tree"}},
	{name: "synth-1rank", synth: &synth.Shape{Ranks: 1, Steps: 12, Ops: 96, Seed: 2}, args: []string{"--scale-kernel", "gemm_2=3"}},
	{name: "synth-2ranks-inferred", synth: &synth.Shape{Ranks: 2, Steps: 12, Ops: 64, Seed: 3, Unmarked: true}, args: []string{"--topology", "h100x8", "--scale-kernel", "*=0.7"}},
}

// writeSynthFiles writes sh's trace, a file per rank, into dir.
func writeSynthFiles(t testing.TB, dir string, sh synth.Shape) []string {
	t.Helper()
	var paths []string
	var ws []io.Writer
	for r := range sh.Ranks {
		p := filepath.Join(dir, fmt.Sprintf("rank-%d.json", r))
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		paths, ws = append(paths, p), append(ws, f)
	}
	if err := synth.Write(ws, sh); err != nil {
		t.Fatal(err)
	}
	return paths
}

// The what-if replayed a step at a time prints, byte for byte, the comparison the whole-trace
// replay printed: the same reports of A and B, critical paths, notes and verdict.
func TestWhatIfStreamsAsWhole(t *testing.T) {
	shared := filepath.Join("..", "..", "..", "shared", "data")
	for _, tc := range whatifWholeCases {
		t.Run(tc.name, func(t *testing.T) {
			dir, in := "", tc.in
			if tc.synth != nil {
				dir = t.TempDir()
				in = writeSynthFiles(t, dir, *tc.synth)
			} else if !strings.HasPrefix(in[0], "testdata") {
				in = nil
				for _, p := range tc.in {
					p = filepath.Join(shared, p)
					if _, err := os.Stat(p); err != nil {
						t.Skipf("real traces not available (%s missing): they live in ../shared/data beside the checkout", p)
					}
					in = append(in, p)
				}
			}
			code, out, errs := runCLI(t, append(append([]string{"whatif", "--json"}, in...), tc.args...)...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if dir != "" {
				out = strings.ReplaceAll(out, dir, "DIR")
			}
			golden := filepath.Join("testdata", "whatif_whole", tc.name+".json")
			if *updateGolden {
				if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to write it)", err)
			}
			if out != string(want) {
				t.Errorf("whatif --json differs from %s, the whole-trace replay's:\n%s", golden, out)
			}
		})
	}
}
