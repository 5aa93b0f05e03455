package importers

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/importers/nsys/nsystest"
	"github.com/xfertop/xfertop/timeline"
)

// An Nsight export without a step range but with FSDP's root pre-forward hook three times gets two
// steps, from one hook to the next, passed on after its ops, and the result says how they were
// found; an export with its ProfilerStep range gets none added and nothing said; one with neither
// is said to be one step.
func TestStreamInfersSteps(t *testing.T) {
	const gtid = "(" + "4242 << 24" + ") + 7"
	nvtx := func(rows string) []string {
		r := nsystest.OldRows()
		r[0] += ",(10,'FSDP::root_pre_forward')"
		return append(r[:len(r)-1], `INSERT INTO NVTX_EVENTS VALUES `+rows)
	}
	hook := func(at string) string {
		return "(" + at + ", " + at + " + 500, 59, NULL, NULL, NULL, NULL, " + gtid + ", NULL, 10, 0)"
	}
	for _, tc := range []struct {
		name  string
		rows  []string
		steps int
		how   string
	}{
		{"three hooks", nvtx(hook("5000000000") + "," + hook("5000010000") + "," + hook("5000020000")), 2, `inferred from the NVTX range "FSDP::root_pre_forward", 3 times`},
		{"a ProfilerStep range", nsystest.OldRows(), 1, ""},
		{"neither", nvtx("(5000001000, 5000009000, 59, NULL, NULL, NULL, NULL, " + gtid + ", NULL, 8, 0)"), 0, "no step found, so every figure covers the whole input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.sqlite")
			if err := nsystest.Write(path, nsystest.OldSchema, tc.rows...); err != nil {
				t.Fatal(err)
			}
			var got Collect
			res, err := Stream([]string{path}, Options{}, &got)
			if err != nil {
				t.Fatal(err)
			}
			var steps []timeline.Event
			for _, e := range got.All {
				if e.Kind == timeline.KindStep {
					steps = append(steps, e)
				}
			}
			if len(steps) != tc.steps || res.Events != len(got.All) {
				t.Fatalf("%d steps, %d events counted of %d; want %d steps", len(steps), res.Events, len(got.All), tc.steps)
			}
			if (tc.how == "") != (res.Steps == "") || !strings.Contains(res.Steps, tc.how) {
				t.Errorf("how = %q; want %q", res.Steps, tc.how)
			}
			if tc.name == "three hooks" && (steps[0].End-steps[0].Start != 10000 || steps[1].Start != steps[0].End || got.Header.Strings.Lookup(steps[0].Label) != "FSDP::root_pre_forward") {
				t.Errorf("steps %+v; want 10 µs each, one after the other, named after the hook", steps)
			}
		})
	}
}

// A PyTorch trace with no ProfilerStep whose kernels repeat a training step of layers, its
// gradients' all-reduce inside, gets the steps (not the layers) from the repeating sequence, and
// the result says so; a trace of one step gets none.
func TestStreamInfersStepsFromKernels(t *testing.T) {
	trace := func(steps int) string {
		var b strings.Builder
		b.WriteString(`{"traceEvents":[`)
		ts := 100.0
		kernel := func(name string) {
			fmt.Fprintf(&b, `{"ph":"X","cat":"kernel","name":%q,"pid":0,"tid":7,"ts":%.1f,"dur":2,"args":{"device":0,"stream":7}},`, name, ts)
			ts += 3
		}
		for range steps {
			ts += 50 // the host's work between steps
			kernel("embedding")
			for range 6 { // six layers forward, six backward
				kernel("sgemm_fwd")
				kernel("relu_fwd")
			}
			for range 6 {
				kernel("sgemm_bwd")
			}
			kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL")
			kernel("adam")
		}
		s := strings.TrimSuffix(b.String(), ",")
		return s + `]}`
	}
	for _, tc := range []struct {
		steps, want int
		how         string
	}{
		{5, 5, "steps inferred from a kernel sequence of 21 ops repeating 5×"},
		{1, 0, "no sequence of GPU ops repeats twice: no step found, so every figure covers the whole input"},
	} {
		path := filepath.Join(t.TempDir(), "x.json")
		if err := os.WriteFile(path, []byte(trace(tc.steps)), 0o644); err != nil {
			t.Fatal(err)
		}
		var got Collect
		res, err := Stream([]string{path}, Options{}, &got)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range got.All {
			if e.Kind == timeline.KindStep {
				n++
			}
		}
		if n != tc.want || !strings.Contains(res.Steps, tc.how) || (tc.how == "") != (res.Steps == "") {
			t.Errorf("%d steps' trace: %d steps (%q); want %d (%q)", tc.steps, n, res.Steps, tc.want, tc.how)
		}
	}
}
