package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/xfertop/xfertop/report"
)

// whatifSimTolerancePct is how far a what-if of a simulator recording may predict the mean step
// time from the simulator's own run of the same change. On the job below every change is
// predicted to within 0.01%; before the engine's step boundary was an edge of the graph, a 4×
// slower NIC was predicted 18% short, a 2× faster one 1.9% long and halved kernels 2.3% short.
// (With 8 layers instead of 2, NVLink ×2 comes out 1.6% short: the NCCL model times a
// collective alone where the simulator shares links flow by flow, docs/whatif.md.)
const whatifSimTolerancePct = 1.0

// What-if of a recording of the engine predicts what the engine itself gives for the same change:
// a data-parallel job across two hosts (its gradients' all-reduce over the NICs ends each step),
// replayed with a slower and a faster NIC, NVLink doubled and its kernels scaled, against the
// simulator's run of each changed setup (the independent reference), on the mean step time after
// the first. At 128 GPUs the job is also pipelined across hosts: its stages' sends and receives
// cross the NICs, and a slower NIC was predicted 4.7% short while they kept their measured time
// (205.6 ms a step where the run takes 215.7); timed on their changed path, +0.01%.
func TestWhatIfPredictsTheSimulator(t *testing.T) {
	dir := t.TempDir()
	topo := func(name, line string) string {
		p := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(p, []byte("base: h100x8x4\n"+line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// record runs job with extra flags into a recording and returns its path.
	record := func(job []string, name string, extra ...string) string {
		rec := filepath.Join(dir, name+".xfr")
		args := append(append(append([]string{}, job...), extra...), "--record", rec, "--force-overwrite") // one name per change: each subtest rewrites it
		if code, _, errs := runCLI(t, args...); code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		return rec
	}
	type change struct {
		name   string
		whatif []string // the change, to whatif
		run    []string // the same change, to run
	}
	slowNIC := func(hosts string) change {
		return change{"NIC 4× slower", []string{"--topology", topo("slownic", "nics.bandwidth: 100Gb/s"), "--hosts", hosts}, []string{"--topology", topo("slownic", "nics.bandwidth: 100Gb/s")}}
	}
	fastNIC := func(hosts string) change {
		return change{"NIC 2× faster", []string{"--topology", topo("fastnic", "nics.bandwidth: 800Gb/s"), "--hosts", hosts}, []string{"--topology", topo("fastnic", "nics.bandwidth: 800Gb/s")}}
	}
	jobs := []struct {
		name    string
		job     []string
		changes []change
	}{
		{"16 GPUs", []string{"run", "--headless", "--scenario", "llm-train", "--hosts", "2", "--steps", "3", "--set", "pp=1", "--set", "layers=2", "--set", "dp_comm=allreduce"}, []change{
			slowNIC("2"), fastNIC("2"),
			{"NVLink ×2", []string{"--topology", topo("fastnvl", "gpu.nvlink: 900GB/s"), "--hosts", "2"}, []string{"--topology", topo("fastnvl", "gpu.nvlink: 900GB/s")}},
			{"kernels ×0.5", []string{"--scale-kernel", "*=0.5"}, []string{"--topology", "h100x8x4", "--set", "mfu=1"}},
			{"kernels ×2", []string{"--scale-kernel", "*=2"}, []string{"--topology", "h100x8x4", "--set", "mfu=0.25"}},
		}},
		{"128 GPUs pipelined", []string{"run", "--headless", "--scenario", "llm-train", "--hosts", "16", "--steps", "3", "--set", "dp_comm=allreduce"}, []change{slowNIC("16"), fastNIC("16")}},
	}
	for _, j := range jobs {
		base := record(j.job, "base", "--topology", "h100x8x4")
		for _, tc := range j.changes {
			t.Run(j.name+"/"+tc.name, func(t *testing.T) {
				_, predicted := steadyStep(t, append([]string{base}, tc.whatif...)...)
				ran, _ := steadyStep(t, record(j.job, "changed", tc.run...))
				if err := (predicted - ran) / ran * 100; math.Abs(err) > whatifSimTolerancePct {
					t.Errorf("whatif %v predicts %.2f ms a step; the simulator's run of it gives %.2f ms (%+.2f%%, tolerance ±%.0f%%)", tc.whatif, predicted/1e6, ran/1e6, err, whatifSimTolerancePct)
				}
			})
		}
	}
}

// --kernels-from keeps each rank's own kernel times: a job with one GPU at half speed, replayed
// with the healthy run's kernels, predicts the healthy run's step time. Taking each kernel name's
// mean over every rank spread the slow GPU's 2× over the 16 ranks as a 5% cut on each, and
// predicted 755 ms where the healthy run takes 454.
func TestWhatIfKernelsFromKeepsAStraggler(t *testing.T) {
	dir := t.TempDir()
	job := []string{"run", "--headless", "--scenario", "llm-train", "--topology", "h100x8x4", "--hosts", "2", "--steps", "3", "--set", "pp=1", "--seed", "3"}
	healthy, slow := filepath.Join(dir, "healthy.xfr"), filepath.Join(dir, "slow.xfr")
	for _, args := range [][]string{
		append(append([]string{}, job...), "--record", healthy),
		append(append([]string{}, job...), "--fault", "kind=gpu_slow,host=1,gpu=3,factor=0.5", "--record", slow),
	} {
		if code, _, errs := runCLI(t, args...); code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
	}
	want, _ := steadyStep(t, healthy)
	measured, predicted := steadyStep(t, slow, "--kernels-from", healthy)
	if err := (predicted - want) / want * 100; math.Abs(err) > whatifSimTolerancePct {
		t.Errorf("whatif slow.xfr --kernels-from healthy.xfr: %.2f → %.2f ms a step; the healthy run takes %.2f ms (%+.2f%%, tolerance ±%.0f%%)", measured/1e6, predicted/1e6, want/1e6, err, whatifSimTolerancePct)
	}
}

// --kernels-from on a pipelined job (32 GPUs, 4 stages across hosts, GPU 3 of host 2 at half
// speed) predicts the healthy run. Its stage 2, slow, always found its inputs there: the engine
// did not report the event waits that did not wait, so the graph had no dependency of stage 2's
// kernels on the activations and gradients it received, and replayed at full speed the stage ran
// ahead of them: 151 ms a step predicted where the healthy run takes 158 (-4.5%).
func TestWhatIfKernelsFromPipelined(t *testing.T) {
	dir := t.TempDir()
	job := []string{"run", "--headless", "--scenario", "llm-train", "--topology", "h100x8x4", "--steps", "3", "--seed", "3"}
	healthy, slow := filepath.Join(dir, "healthy.xfr"), filepath.Join(dir, "slow.xfr")
	for _, args := range [][]string{
		append(append([]string{}, job...), "--record", healthy),
		append(append([]string{}, job...), "--fault", "kind=gpu_slow,host=2,gpu=3,factor=0.5", "--record", slow),
	} {
		if code, _, errs := runCLI(t, args...); code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
	}
	want, _ := steadyStep(t, healthy)
	measured, predicted := steadyStep(t, slow, "--kernels-from", healthy)
	// The replay gives its gaps their causes: B's "other" gaps are the healthy run's (0.2 ms a step
	// over all streams, against 0.6 ms; 304 ms while a replayed op's enqueue moved with its start).
	other := "stream gaps per step: other"
	if _, b := rowAB(t, other, slow, "--kernels-from", healthy); math.Abs(b-rowA(t, other, healthy)) > 1e6 {
		t.Errorf("whatif slow.xfr --kernels-from healthy.xfr: %s %.3f ms; the healthy run's %.3f", other, b/1e6, rowA(t, other, healthy)/1e6)
	}
	if measured < 1.3*want {
		t.Fatalf("the slow GPU's run takes %.2f ms a step, the healthy one %.2f: the stage is not the bottleneck this test needs", measured/1e6, want/1e6)
	}
	if err := (predicted - want) / want * 100; math.Abs(err) > whatifSimTolerancePct {
		t.Errorf("whatif slow.xfr --kernels-from healthy.xfr: %.2f → %.2f ms a step; the healthy run takes %.2f ms (%+.2f%%, tolerance ±%.0f%%)", measured/1e6, predicted/1e6, want/1e6, err, whatifSimTolerancePct)
	}
}

// steadyStep is a whatif comparison's "step time mean after the first", A's and B's.
func steadyStep(t *testing.T, args ...string) (a, b float64) {
	t.Helper()
	return rowAB(t, "step time mean after the first", args...)
}

// rowA is the measured figure of a whatif comparison's row, with nothing changed.
func rowA(t *testing.T, name, trace string) float64 {
	t.Helper()
	a, _ := rowAB(t, name, trace, "--scale-kernel", "*=1")
	return a
}

// rowAB is a whatif comparison's row, A's and B's figures.
func rowAB(t *testing.T, name string, args ...string) (a, b float64) {
	t.Helper()
	code, out, errs := runCLI(t, append([]string{"whatif", "--json"}, args...)...)
	if code != exitOK {
		t.Fatalf("whatif %v: exit %d: %s", args, code, errs)
	}
	var c report.Comparison
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatal(err)
	}
	for _, r := range c.Rows {
		if r.Name == name && r.A != nil && r.B != nil {
			return *r.A, *r.B
		}
	}
	t.Fatalf("whatif %v: no %s in %s", args, name, out)
	return 0, 0
}

// A GPU that slows down during the run (half speed from 1.1 s, in the first step after the
// communicators' setup; 32 GPUs pipelined, 232 ms steps, healthy 158 ms): --kernels-from the
// healthy run predicts the healthy run, and so does --heal of the fault. Each kernel's ratio was
// the other trace's mean over this trace's mean on its device, which mixed the first step's
// healthy kernels with the later slow ones: the later steps' kernels stayed 6.7% slower than
// healthy, and the job was predicted 166 ms (+5%) while the floor said ±1%.
func TestWhatIfKernelsFromAStragglerFromMidRun(t *testing.T) {
	dir := t.TempDir()
	job := []string{"run", "--headless", "--scenario", "llm-train", "--topology", "h100x8x4", "--steps", "4", "--seed", "3"}
	healthy, slow := filepath.Join(dir, "healthy.xfr"), filepath.Join(dir, "slow.xfr")
	for _, args := range [][]string{
		append(append([]string{}, job...), "--record", healthy),
		append(append([]string{}, job...), "--fault", "kind=gpu_slow,host=2,gpu=3,factor=0.5,at=1.1s", "--record", slow),
	} {
		if code, _, errs := runCLI(t, args...); code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
	}
	want, _ := steadyStep(t, healthy)
	for _, change := range [][]string{{"--kernels-from", healthy}, {"--heal", "kind=gpu_slow"}} {
		measured, predicted := steadyStep(t, append([]string{slow}, change...)...)
		if measured < 1.3*want {
			t.Fatalf("the slow GPU's run takes %.2f ms a step, the healthy one %.2f: the stage is not the bottleneck this test needs", measured/1e6, want/1e6)
		}
		if err := (predicted - want) / want * 100; math.Abs(err) > whatifSimTolerancePct {
			t.Errorf("whatif slow.xfr %v: %.2f → %.2f ms a step; the healthy run takes %.2f ms (%+.2f%%, tolerance ±%.0f%%)", change, measured/1e6, predicted/1e6, want/1e6, err, whatifSimTolerancePct)
		}
	}
}
