package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/units"
	"github.com/xfertop/xfertop/whatif"
)

// TestWholeGraphWarning: an input without steps past wholeGraphOps is told that the what-if holds
// all of it at once, with the ops and the memory that takes; one with steps, or a small one, is not.
func TestWholeGraphWarning(t *testing.T) {
	kernels := func(n int) []timeline.Event {
		evs := make([]timeline.Event, n)
		for i := range evs {
			evs[i] = timeline.Event{Kind: timeline.KindKernel, Start: int64(i) * 10, End: int64(i)*10 + 5, Stream: 7}
		}
		return evs
	}
	withSteps := append([]timeline.Event{{Kind: timeline.KindStep, Start: 0, End: 600_000}, {Kind: timeline.KindStep, Start: 600_000, End: 2_000_000}}, kernels(wholeGraphOps+1)...)
	for _, c := range []struct {
		name string
		evs  []timeline.Event
		want string
	}{
		{"no steps, large", kernels(wholeGraphOps + 1), "t.json marks no steps: the what-if holds its whole graph at once, 100001 ops (about 89.65 MiB of memory)"},
		{"no steps, small", kernels(wholeGraphOps), ""},
		{"steps", withSteps, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var p whatif.Plan
			p.Events(c.evs)
			got := wholeGraphWarning("t.json", &p)
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Errorf("wholeGraphWarning = %q; want %q", got, c.want)
			}
		})
	}
}

// TestWholeGraphBound: an input without steps of more ops than --max-graph-ops is refused, the
// error naming the input, its ops, their memory and the flag with the value that admits it; at
// the bound, with the bound off (0), or with steps, it is not.
func TestWholeGraphBound(t *testing.T) {
	kernels := func(n int) []timeline.Event {
		evs := make([]timeline.Event, n)
		for i := range evs {
			evs[i] = timeline.Event{Kind: timeline.KindKernel, Start: int64(i) * 10, End: int64(i)*10 + 5, Stream: 7}
		}
		return evs
	}
	withSteps := append([]timeline.Event{{Kind: timeline.KindStep, Start: 0, End: 600}, {Kind: timeline.KindStep, Start: 600, End: 2_000}}, kernels(200)...)
	for _, c := range []struct {
		name string
		evs  []timeline.Event
		max  int64
		want string
	}{
		{"past the bound", kernels(101), 100, "t.json marks no steps: its what-if would hold its whole graph at once, 101 ops (about 92.71 KiB of memory), " +
			"more than --max-graph-ops 100: raise it with --max-graph-ops 101 (or 0: no bound)"},
		{"at the bound", kernels(100), 100, ""},
		{"no bound", kernels(101), 0, ""},
		{"steps", withSteps, 100, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var p whatif.Plan
			p.Events(c.evs)
			err := wholeGraphBound("t.json", &p, c.max)
			if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
				t.Errorf("wholeGraphBound = %v; want %q", err, c.want)
			}
		})
	}
}

// whatif of a trace without steps past --max-graph-ops exits with status 4 naming the flag; a
// negative bound is a usage error.
func TestWholeGraphBoundCLI(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "hta_small.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The same trace without its ProfilerStep ranges: no steps.
	trace := filepath.Join(t.TempDir(), "nosteps.json")
	if err := os.WriteFile(trace, []byte(strings.ReplaceAll(string(b), "ProfilerStep#", "Phase ")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI(t, "whatif", "--headless", "--max-graph-ops", "3", trace, "--scale-kernel", "*=0.5")
	if code != exitData || !strings.Contains(errs, "marks no steps") || !strings.Contains(errs, "raise it with --max-graph-ops") {
		t.Errorf("exit %d: %s; want %d, refused naming --max-graph-ops", code, errs, exitData)
	}
	if code, _, errs := runCLI(t, "whatif", "--headless", "--max-graph-ops", "-1", trace); code != exitUsage || !strings.Contains(errs, "--max-graph-ops -1: must not be negative") {
		t.Errorf("negative bound: exit %d: %s; want %d", code, errs, exitUsage)
	}
	if code, _, errs := runCLI(t, "whatif", "--headless", trace, "--scale-kernel", "*=0.5"); code != exitOK {
		t.Errorf("within the default bound: exit %d: %s; want %d", code, errs, exitOK)
	}
}

// TestWholeGraphOpBytesDocumented: the docs that state what a what-if without steps holds an op,
// and the memory --max-graph-ops' default admits, state wholeGraphOpBytes' figures, and
// docs/performance.md keeps the resident measurement the constant is, so a change of the
// constant without a measurement and its docs fails here.
func TestWholeGraphOpBytesDocumented(t *testing.T) {
	perOp := "about " + units.Bytes(wholeGraphOpBytes) + " an op"
	bound := units.Bytes(defaultMaxGraphOps * wholeGraphOpBytes)
	for _, c := range []struct {
		path string
		want []string
	}{
		{filepath.Join("..", "..", "README.md"), []string{perOp}},
		{filepath.Join("..", "..", "docs", "whatif.md"), []string{perOp, "about " + bound}},
		{filepath.Join("..", "..", "docs", "performance.md"), []string{fmt.Sprintf("wholeGraphOpBytes = %d", wholeGraphOpBytes)}},
	} {
		b, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range c.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s does not state %q (wholeGraphOpBytes = %d)", c.path, w, wholeGraphOpBytes)
			}
		}
	}
}
