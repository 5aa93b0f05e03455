//go:build cgo

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/xfertop/xfertop/timeline"
)

var counterBuild struct {
	once    sync.Once
	lib, v4 string
	err     error
}

// counterLib builds testdata/counter, a profiler plugin that counts the calls it gets: with v5
// and v7, and (v4) with v4 alone.
func counterLib(t *testing.T) (lib, v4 string) {
	t.Helper()
	tools(t)
	counterBuild.once.Do(func() {
		cc := os.Getenv("CC")
		if cc == "" {
			cc = "gcc"
		}
		counterBuild.lib = filepath.Join(build.dir, "libnccl-profiler-counter.so")
		counterBuild.v4 = filepath.Join(build.dir, "libnccl-profiler-counter4.so")
		for _, b := range [][]string{{counterBuild.lib}, {counterBuild.v4, "-DCOUNTER_V4"}} {
			args := append([]string{"-O2", "-Wall", "-Werror", "-shared", "-fPIC", "-o", b[0]}, b[1:]...)
			out, err := exec.Command(cc, append(args, "testdata/counter/counter.c")...).CombinedOutput()
			if err != nil {
				counterBuild.err = fmt.Errorf("build the counter plugin: %v\n%s", err, out)
				return
			}
		}
	})
	if counterBuild.err != nil {
		t.Fatal(counterBuild.err)
	}
	return counterBuild.lib, counterBuild.v4
}

// calls is one process's count of profiler calls: as the harness made them to xfertop's plugin,
// or as the chained plugin received them.
type calls struct{ start, stop, state int }

// TestHarnessChain: with XFERTOP_CHAIN_PLUGIN, a second plugin gets every call NCCL makes (its
// own contexts and handles, parents translated to its handles), through the interface nearest to
// the one NCCL took, while the console still receives exactly what the job issued.
func TestHarnessChain(t *testing.T) {
	defer goleak.VerifyNone(t)
	counter, counter4 := counterLib(t)
	cases := []struct {
		lookup, scenario, level string
		chained                 int // the interface the counter is called through
	}{
		{"7,6,5,4", "allreduce", "kernel", 7}, // same version (with kernel phases)
		{"7,6,5,4", "ce", "api", 7},
		{"6,5,4", "allreduce", "all", 5}, // the counter has no v6: the nearest older one
		{"6,5,4", "sendrecv", "proxy", 5},
		{"4", "allreduce", "kernel", 5},    // and no v4: the nearest newer one
		{"7,6,5,4", "allreduce", "all", 4}, // a v4 plugin from v7: v4's events only, a task's parent its group
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s-v%s-to-v%d-%s", c.scenario, c.lookup, c.chained, c.level), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "counts")
			lib := counter
			if c.chained == 4 {
				lib = counter4
			}
			_, _, runs := job(t, 2, []string{"XFERTOP_CHAIN_PLUGIN=" + lib, "COUNTER_OUT=" + out, "XFERTOP_NCCL_EVENTS=" + c.level},
				"-lookup", c.lookup, "-scenario", c.scenario, "-iters", "3")
			var issued []calls
			for _, r := range runs {
				var x calls
				for _, l := range r.lines {
					if _, err := fmt.Sscanf(l, "calls start %d stop %d state %d", &x.start, &x.stop, &x.state); err == nil {
						issued = append(issued, x)
					}
				}
				if strings.Contains(r.out, "xfertop profiler:") {
					t.Errorf("rank %d warned: %s", r.rank, r.out)
				}
			}
			files, _ := filepath.Glob(out + ".*")
			var got []calls
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				var v, inits, fin, foreign, phases, bad int
				var x calls
				if _, err := fmt.Sscanf(string(b), "version %d init %d start %d stop %d state %d finalize %d foreign %d phases %d badparents %d",
					&v, &inits, &x.start, &x.stop, &x.state, &fin, &foreign, &phases, &bad); err != nil {
					t.Fatalf("%s: %q: %v", f, b, err)
				}
				if v != c.chained || inits != 1 || fin != 1 || foreign != 0 || bad != 0 {
					t.Errorf("%s: through v%d (want v%d), %d inits, %d finalizes, %d handles not its own, %d parents of the wrong type",
						f, v, c.chained, inits, fin, foreign, bad)
				}
				if c.chained == 7 && c.scenario == "allreduce" && phases == 0 {
					t.Errorf("%s: no kernel phases forwarded through v7", f)
				}
				got = append(got, x)
			}
			cmpCalls := func(a, b calls) int { return a.start*1e6 + a.stop*1e3 + a.state - (b.start*1e6 + b.stop*1e3 + b.state) }
			slices.SortFunc(issued, cmpCalls)
			slices.SortFunc(got, cmpCalls)
			if c.chained == 4 {
				// v4 has no API or kernel-launch events: fewer calls, each event stopped.
				for i, g := range got {
					if len(got) != 2 || g.start == 0 || g.start != g.stop || g.start >= issued[i].start {
						t.Errorf("the v4 plugin got %+v; the job made %+v", got, issued)
					}
				}
			} else if len(issued) != 2 || !slices.Equal(got, issued) {
				t.Errorf("the chained plugin got %+v; the job made %+v", got, issued)
			}
		})
	}
}

// A chained plugin that cannot be loaded, fails its init, or is xfertop's own: each rank says so
// on stderr, the console gets an alert saying so, and the console receives the job as without it.
func TestHarnessChainFails(t *testing.T) {
	defer goleak.VerifyNone(t)
	counter, _ := counterLib(t)
	lib, _ := tools(t)
	missing := filepath.Join(t.TempDir(), "libnccl-profiler-missing.so")
	cases := []struct {
		name string
		env  []string
		want string
	}{
		{"missing", []string{"XFERTOP_CHAIN_PLUGIN=" + missing}, "XFERTOP_CHAIN_PLUGIN=" + missing + ": cannot load it"},
		{"init-fails", []string{"XFERTOP_CHAIN_PLUGIN=" + counter, "COUNTER_FAIL_INIT=1"}, "chained profiler counter: its init failed (result 3)"},
		{"itself", []string{"XFERTOP_CHAIN_PLUGIN=" + lib}, "is xfertop's own plugin"},
		{"no-interface", []string{"XFERTOP_CHAIN_PLUGIN=libc.so.6"}, "no NCCL profiler interface v4 to v7 in it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			evs, labels, runs := job(t, 2, c.env, "-iters", "2")
			for _, r := range runs {
				if !strings.Contains(r.out, "xfertop profiler: ") || !strings.Contains(r.out, c.want) {
					t.Errorf("rank %d: no warning %q on stderr:\n%s", r.rank, c.want, r.out)
				}
			}
			alerts := 0
			for _, e := range evs {
				if e.Kind == timeline.KindAlert && strings.Contains(labels.Lookup(e.Label), c.want) {
					alerts++
				}
			}
			if alerts != 2 {
				t.Errorf("%d alerts saying %q; want one per rank", alerts, c.want)
			}
		})
	}
}

// XFERTOP_CHAIN_PLUGIN=counter loads libnccl-profiler-counter.so from the library path, as
// NCCL_PROFILER_PLUGIN=counter would.
func TestHarnessChainByName(t *testing.T) {
	defer goleak.VerifyNone(t)
	counter, _ := counterLib(t)
	out := filepath.Join(t.TempDir(), "counts")
	_, _, runs := job(t, 2, []string{"XFERTOP_CHAIN_PLUGIN=counter", "LD_LIBRARY_PATH=" + filepath.Dir(counter), "COUNTER_OUT=" + out}, "-iters", "2")
	for _, r := range runs {
		if strings.Contains(r.out, "xfertop profiler:") {
			t.Errorf("rank %d warned: %s", r.rank, r.out)
		}
	}
	if files, _ := filepath.Glob(out + ".*"); len(files) != 2 {
		t.Errorf("the chained plugin, loaded by name, wrote %v; want one file per rank", files)
	}
}
