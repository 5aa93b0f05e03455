//go:build cuda

package main

// Run with the GPU of a GPU machine, or in CI with the fake driver (engine/cuda/testdata/fakedriver).

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"gorgonia.org/cu"

	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// keyPaths lists the paths of every key in a decoded JSON value; list elements count once, as "[]".
func keyPaths(v any, prefix string, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			out[prefix+"."+k] = true
			keyPaths(e, prefix+"."+k, out)
		}
	case []any:
		for _, e := range x {
			keyPaths(e, prefix+"[]", out)
		}
	}
}

// `xfertop run --backend cuda --headless --json` reports what the simulator reports, under the same
// keys, for each kind of workload; the cuda report adds only how ranks were mapped onto GPUs. The
// same workload moves the same transfers on both. Neither leaves out a key that the other could
// have (omittedKeys: every key the report declares is there, unless mayBeAbsent says why not).
func TestCUDAReportHasSimKeys(t *testing.T) {
	extras := []string{".mapping"}
	for _, sc := range [][]string{
		{"--scenario", "pipeline", "--set", "activation_bytes=1MiB", "--set", "compute=1ms", "--set", "microbatches=2"},
		{"--scenario", "copy-sweep", "--set", "max_bytes=1MiB", "--set", "iters=2"},
		{"--scenario", "allreduce-sweep", "--set", "max_bytes=64KiB", "--set", "iters=1"},
		{"--scenario", "crosshost"},
		{"--scenario", "tp-overlap", "--set", "overlap=ring", "--set", "layers=1", "--set", "shard_bytes=1MiB", "--set", "gemm=100us"},
		{"--scenario", "tp-overlap", "--set", "overlap=off", "--set", "layers=1", "--set", "shard_bytes=1MiB", "--set", "gemm=100us"},
	} {
		t.Run(strings.Join(sc[1:], " "), func(t *testing.T) {
			paths := map[string]map[string]bool{}
			reports := map[string]map[string]any{}
			for _, backend := range []string{"sim", "cuda"} {
				args := append([]string{"run", "--headless", "--json", "--steps", "1", "--backend", backend}, sc...)
				if backend == "cuda" {
					args = append(args, "--fit")
				}
				code, out, errs := runCLI(t, args...)
				if code != exitOK {
					t.Fatalf("%s: exit %d: %s", backend, code, errs)
				}
				var r map[string]any
				if err := json.Unmarshal([]byte(out), &r); err != nil {
					t.Fatalf("%s: not JSON: %v", backend, err)
				}
				// A key left out when empty (0, false) would be in one report and not the other
				// whenever the backends' events differ in order or timing, which the key sets
				// compared below cannot show while both happen to leave it out (late_ns did).
				if keys := omittedKeys(t, out); len(keys) > 0 {
					t.Errorf("%s: keys left out of the report, which the other backend's could have: %v", backend, keys)
				}
				if r["backend"] != backend {
					t.Errorf("backend = %v, want %s", r["backend"], backend)
				}
				if alerts, _ := r["alerts"].([]any); backend == "cuda" && len(alerts) > 0 {
					t.Errorf("cuda run raised alerts: %v", alerts)
				}
				reports[backend] = r
				paths[backend] = map[string]bool{}
				keyPaths(r, "", paths[backend])
			}
			for _, k := range []string{"transfers", "steps"} {
				sim, cuda := reports["sim"][k].(map[string]any)["count"], reports["cuda"][k].(map[string]any)["count"]
				if sim != cuda {
					t.Errorf("%s: %v on the simulator, %v on cuda", k, sim, cuda)
				}
			}
			var missing, added []string
			for p := range paths["sim"] {
				if !paths["cuda"][p] {
					missing = append(missing, p)
				}
			}
			for p := range paths["cuda"] {
				if !paths["sim"][p] && !slices.ContainsFunc(extras, func(x string) bool { return p == x }) {
					added = append(added, p)
				}
			}
			sort.Strings(missing)
			sort.Strings(added)
			// Lists that stay empty on one backend (no stragglers, say) leave no element keys; a
			// key missing from an element present on both is what counts.
			missing = slices.DeleteFunc(missing, func(p string) bool { return !hasListParent(paths["cuda"], p) })
			added = slices.DeleteFunc(added, func(p string) bool { return !hasListParent(paths["sim"], p) })
			if len(missing) > 0 || len(added) > 0 {
				t.Errorf("keys only in the simulator's report: %v\nkeys only in the cuda report: %v", missing, added)
			}
		})
	}
}

// hasListParent reports whether p's enclosing list has elements in paths (or p is in no list).
func hasListParent(paths map[string]bool, p string) bool {
	i := strings.LastIndex(p, "[]")
	if i < 0 {
		return true
	}
	for q := range paths {
		if len(q) > i+2 && strings.HasPrefix(q, p[:i+2]) {
			return true
		}
	}
	return false
}

// `--backend cuda --set graphs=on` runs each built-in scenario that has the knob: the first step
// as launched, the later ones as one graph launch per rank replaying everything the step did,
// NCCL calls included. Every step does the same work, so of steps S the captured ops are exactly
// (S-1)/S of all, and each rank that worked in the first step launches the graph S-1 times.
// It needs a GPU per rank (--fit shares GPUs, which a graph refuses): on the fake driver, with
// fewer than 4 fake GPUs, it runs itself again with XFER_FAKE_GPUS=4.
func TestCUDAGraphsOn(t *testing.T) {
	n, err := cu.NumDevices()
	if err != nil {
		t.Skipf("no GPU: %v", err)
	}
	if n < 4 && os.Getenv("XFER_FAKE_DRIVER") != "" && os.Getenv("XFER_FAKE_GPUS") == "" {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestCUDAGraphsOn$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "XFER_FAKE_GPUS=4")
		out, err := cmd.CombinedOutput()
		t.Logf("with XFER_FAKE_GPUS=4:\n%s", out)
		if err != nil {
			t.Fatalf("with XFER_FAKE_GPUS=4: %v", err)
		}
		return
	}
	g := min(n, 4)
	if g == 3 {
		g = 2
	}
	topo := fmt.Sprintf("h100x%d", g)
	const steps = 3
	for _, tc := range []struct {
		gpus int
		args []string
	}{
		{4, []string{"--topology", topo, "--scenario", "pipeline", "--set", "activation_bytes=1MiB", "--set", "compute=1ms", "--set", "microbatches=2"}},
		{2, []string{"--topology", topo, "--scenario", "tp-overlap", "--set", fmt.Sprintf("tp=%d", g), "--set", "overlap=ring", "--set", "layers=1", "--set", "shard_bytes=1MiB", "--set", "gemm=100us"}},
		{2, []string{"--topology", topo, "--scenario", "tp-overlap", "--set", fmt.Sprintf("tp=%d", g), "--set", "overlap=off", "--set", "layers=1", "--set", "shard_bytes=1MiB", "--set", "gemm=100us"}},
		{2, []string{"--topology", topo, "--scenario", "llm-train", "--set", "layers=2", "--set", "hidden=1024", "--set", "seq=512", "--set", "microbatches=2"}},
		// On one GPU (--fit) the two ranks' collectives move nothing and their kernels are captured;
		// on two or more each rank has its GPU and NCCL's calls are captured.
		{1, []string{"--topology", "h100x2", "--fit", "--scenario", "tp-overlap", "--set", "tp=2", "--set", "overlap=off", "--set", "layers=1", "--set", "shard_bytes=1MiB", "--set", "gemm=100us"}},
	} {
		t.Run(strings.Join(tc.args[1:], " "), func(t *testing.T) {
			if g < tc.gpus {
				t.Skipf("needs %d GPUs, one per rank; the driver reports %d", tc.gpus, n)
			}
			rec := filepath.Join(t.TempDir(), "run.xfr")
			args := append([]string{"run", "--headless", "--json", "--backend", "cuda", "--steps", fmt.Sprint(steps),
				"--set", "graphs=on", "--record", rec}, tc.args...)
			code, out, errs := runCLI(t, args...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errs)
			}
			var r map[string]any
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("not JSON: %v", err)
			}
			if alerts, _ := r["alerts"].([]any); len(alerts) > 0 {
				t.Errorf("alerts: %v", alerts)
			}
			got, err := recordings.ReadFile(rec, recordings.Options{})
			if err != nil {
				t.Fatal(err)
			}
			busy, captured, launches := 0, 0, 0
			worked := map[int32]bool{}
			for _, e := range got.Events {
				switch {
				case e.Kind == timeline.KindGraphLaunch:
					launches++
				case e.Captured():
					captured++
					busy++
				case e.Kind.IsBusy():
					busy++
					worked[e.Device] = true
				}
			}
			if busy == 0 || captured*steps != busy*(steps-1) {
				t.Errorf("%d of %d busy ops captured; want %d of %d steps' worth", captured, busy, steps-1, steps)
			}
			if want := (steps - 1) * len(worked); launches != want {
				t.Errorf("%d graph launches; want %d (%d ranks worked, %d steps replayed)", launches, want, len(worked), steps-1)
			}
		})
	}
}

// With --fit putting several ranks on one GPU, what the cuda backend runs in place of the
// topology's transfers and collectives is reported as emulated, never as the topology's figures
// (the first run on an H200 reported 8 ranks' all-reduce as 80 one-rank ones at up to 158,729
// GB/s, and cross-host sends run as on-GPU copies as 1270 GB/s over 50 GB/s NICs):
//   - a collective keeps the scenario's op, ranks and count (row by row with the simulator's),
//     marked emulated, with no algbw or busbw;
//   - sends and receives carried by copies count as emulated and have no GB/s of the topology (the
//     receives no rate at all); the links of the topology carry none of their bytes, which are
//     emulated_bytes instead, the bus bytes the simulator moves on its links;
//   - the diagnosis names no slow link, GPU or host of the topology: ranks on one GPU contend for
//     it (the H200 run had named seven slow GPUs and both hosts of a job on one GPU).
func TestCUDAFitReportsEmulated(t *testing.T) {
	for _, sc := range [][]string{
		{"--scenario", "allreduce-sweep", "--set", "max_bytes=64KiB", "--set", "iters=2"},
		{"--scenario", "pipeline", "--set", "activation_bytes=1MiB", "--set", "compute=1ms", "--set", "microbatches=2"},
		{"--scenario", "crosshost"},
	} {
		t.Run(strings.Join(sc[1:], " "), func(t *testing.T) {
			reports := map[string]map[string]any{}
			for _, backend := range []string{"sim", "cuda"} {
				args := append([]string{"run", "--headless", "--json", "--steps", "1", "--backend", backend}, sc...)
				if backend == "cuda" {
					args = append(args, "--fit")
				}
				code, out, errs := runCLI(t, args...)
				if code != exitOK {
					t.Fatalf("%s: exit %d: %s", backend, code, errs)
				}
				var r map[string]any
				if err := json.Unmarshal([]byte(out), &r); err != nil {
					t.Fatalf("%s: not JSON: %v", backend, err)
				}
				reports[backend] = r
			}
			sim, cuda := reports["sim"], reports["cuda"]
			if m, _ := cuda["mapping"].(string); !strings.Contains(m, "(--fit)") {
				t.Skipf("every rank has a GPU of its own here (%s): nothing is emulated", m)
			}
			fitCollectives(t, sim, cuda)
			fitTransfers(t, sim, cuda)
			for _, f := range cuda["findings"].([]any) {
				if k := f.(map[string]any)["kind"]; k == "slow link" || k == "slow GPU" || k == "slow host" {
					t.Errorf("finding from emulated ops: %v", f)
				}
			}
		})
	}
}

// fitCollectives checks a --fit run's collectives against the simulator's: the same rows (op,
// ranks, size class) with the same counts, every one emulated with no bandwidth.
func fitCollectives(t *testing.T, sim, cuda map[string]any) {
	t.Helper()
	counts := func(r map[string]any) map[string]float64 {
		out := map[string]float64{}
		for _, c := range r["collectives"].([]any) {
			row := c.(map[string]any)
			out[fmt.Sprintf("%v on %v ranks, %v B", row["op"], row["ranks"], row["size_class"])] += row["count"].(float64)
		}
		return out
	}
	if s, c := counts(sim), counts(cuda); fmt.Sprint(s) != fmt.Sprint(c) {
		t.Errorf("collectives on cuda --fit: %v\non the simulator: %v", c, s)
	}
	for _, c := range cuda["collectives"].([]any) {
		row := c.(map[string]any)
		if row["emulated"] != true || row["algbw_gbps"] != nil || row["busbw_gbps"] != nil {
			t.Errorf("row %v %v ranks %v B: emulated %v, algbw %v, busbw %v; want emulated, no bandwidth",
				row["op"], row["ranks"], row["bytes"], row["emulated"], row["algbw_gbps"], row["busbw_gbps"])
		}
	}
}

// fitTransfers checks a --fit run's sends and receives: emulated, no GB/s of the topology, on none
// of its links; their bus bytes, emulated_bytes, are those the simulator moves.
func fitTransfers(t *testing.T, sim, cuda map[string]any) {
	t.Helper()
	byKind := cuda["transfers"].(map[string]any)["by_kind"].(map[string]any)
	for _, k := range []string{"send", "recv"} {
		s := byKind[k].(map[string]any)
		if s["emulated"] != s["count"] || s["gbps"] != nil {
			t.Errorf("%s: %v of %v emulated, gbps %v; want all, null", k, s["emulated"], s["count"], s["gbps"])
		}
		if k == "recv" && s["emulated_gbps"] != nil {
			t.Errorf("recv: emulated_gbps %v; want null (a receive waited for its send's copy)", s["emulated_gbps"])
		}
		if c, _ := s["count"].(float64); k == "send" && c > 0 && s["emulated_gbps"] == nil {
			t.Errorf("send: emulated_gbps null; want the copies' rate")
		}
	}
	links := cuda["links"].(map[string]any)
	for _, d := range links["devices"].([]any) {
		dev := d.(map[string]any)
		for _, l := range []string{"nvlink_bytes", "nic_bytes", "pcie_bytes"} {
			if v, _ := dev[l].(float64); v != 0 {
				t.Errorf("device %v: %s %v; want none on the topology's links", dev["device"], l, v)
			}
		}
	}
	simMoved := sim["links"].(map[string]any)["moved_bytes"]
	if links["moved_bytes"] != 0.0 || links["emulated_bytes"] != simMoved {
		t.Errorf("moved_bytes %v, emulated_bytes %v; want 0, the simulator's moved bytes %v", links["moved_bytes"], links["emulated_bytes"], simMoved)
	}
}
