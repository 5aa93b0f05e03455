//go:build cuda

package main

// Run with the GPU of a GPU machine, or in CI with the fake driver (engine/cuda/testdata/fakedriver).

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"
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
// same workload moves the same transfers on both.
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
