package depgraph

import (
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/xfertop/xfertop/importers/kineto"
	"github.com/xfertop/xfertop/timeline"
)

// htaGPUOps is the GPU ops (kernels, copies, memsets) of an HTA overlaid trace in start order, and
// whether HTA marked each critical.
func htaGPUOps(t *testing.T, path string) (names []string, critical []bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		TraceEvents []struct {
			Ph, Cat, Name string
			Ts            float64
			Args          map[string]any
		} `json:"traceEvents"`
	}
	if err := json.NewDecoder(zr).Decode(&tr); err != nil {
		t.Fatal(err)
	}
	evs := tr.TraceEvents
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].Ts < evs[j].Ts })
	for _, e := range evs {
		if e.Ph == "X" && (e.Cat == "kernel" || e.Cat == "gpu_memcpy" || e.Cat == "gpu_memset") {
			names = append(names, e.Name)
			c, _ := e.Args["critical"].(float64)
			critical = append(critical, c == 1)
		}
	}
	return names, critical
}

// TestCriticalPathsHTA: on HTA's end-to-end test trace (an AlexNet forward run twice; its input and
// the overlaid trace HTA's test expects, in testdata/hta), the whole trace's critical path by
// HTA's definition marks the GPU ops HTA marks: the sixteen synchronous host-to-device copies at
// the start and the last six GPU ops, none of the others. The default definition does not (its
// path ends in the host's final synchronisation, which began after the GPU had finished).
func TestCriticalPathsHTA(t *testing.T) {
	dir := filepath.Join("testdata", "hta")
	trace := filepath.Join(dir, "simple_add_trace.json.gz")
	im, err := kineto.ReadFiles([]string{trace}, kineto.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := Build(im.Events, im.Strings)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Steps) != 0 {
		t.Fatalf("%d steps; HTA's test analyses the whole trace", len(g.Steps))
	}
	wantNames, want := htaGPUOps(t, filepath.Join(dir, "simple_add_overlaid_critical_path_trace.json.gz"))
	marked := func(paths []Path) (names []string, critical []bool) {
		on := map[int32]bool{}
		for _, n := range paths[0].Nodes {
			on[n] = true
		}
		for n := range g.Nodes {
			switch g.Event(int32(n)).Kind {
			case timeline.KindKernel, timeline.KindMemcpy:
				names = append(names, im.Strings.Lookup(g.Event(int32(n)).Label))
				critical = append(critical, on[int32(n)])
			}
		}
		return names, critical
	}
	ops, err := kineto.CPUOps([]string{trace}, kineto.Options{}, im.EpochUnixNs)
	if err != nil {
		t.Fatal(err)
	}
	names, got := marked(g.CriticalPathsHTA(nil, nil, ops))
	if len(names) != len(wantNames) {
		t.Fatalf("%d GPU ops; HTA's trace has %d", len(names), len(wantNames))
	}
	count := func(c []bool) (k int) {
		for _, b := range c {
			if b {
				k++
			}
		}
		return k
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("GPU op %d (%s): critical %v; HTA marks it %v", i, wantNames[i], got[i], want[i])
		}
	}
	t.Logf("HTA marks %d of %d GPU ops; this marks %d", count(want), len(want), count(got))
	if _, tight := marked(g.CriticalPaths(nil, nil)); slices.Equal(tight, want) {
		t.Errorf("the default definition marks the GPU ops HTA does; the test no longer tells the two apart")
	}
}
