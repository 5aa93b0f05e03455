package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/depgraph"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/whatif"
)

// --scale-kernel's label shows its factors multiplied, in one order whatever the flags' order; the
// same NAME twice multiplies too.
func TestScaleFlag(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{[]string{"*=2", "sgemm=0.5"}, "*=2 × sgemm=0.5"},
		{[]string{"sgemm=0.5", "*=2"}, "*=2 × sgemm=0.5"},
		{[]string{"gemm=2", "gemm=3"}, "gemm=6"},
	} {
		s := scaleFlag{}
		for _, v := range c.in {
			if err := s.Set(v); err != nil {
				t.Fatal(err)
			}
		}
		if got := s.String(); got != c.want {
			t.Errorf("--scale-kernel %v: %q; want %q", c.in, got, c.want)
		}
	}
}

// --comm names only what the engine models: CollNet is refused with why, and no message or help
// offers it.
func TestWhatIfCommCollNet(t *testing.T) {
	trace := filepath.Join("testdata", "hta_small.json")
	code, _, errs := runCLI(t, "whatif", trace, "--comm", "algo=collnet")
	if code != exitUsage || !strings.Contains(errs, "has no CollNet") || strings.Contains(errs, "|collnet") {
		t.Errorf("--comm algo=collnet: exit %d, %q; want a usage error saying the model has no CollNet", code, errs)
	}
	_, _, errs = runCLI(t, "whatif", trace, "--comm", "algo=foo")
	if strings.Contains(strings.ToLower(errs), "collnet") {
		t.Errorf("--comm algo=foo: %q offers collnet", errs)
	}
	_, out, errs := runCLI(t, "whatif", "--help")
	if strings.Contains(strings.ToLower(out+errs), "collnet") {
		t.Errorf("whatif --help offers collnet:\n%s%s", out, errs)
	}
}

// The steps' spread is unknown, not 0, when fewer than two measured steps remain once the first
// (the warm-up) is left out; or when the trace has no steps.
func TestNoiseFloorSpreadUnknown(t *testing.T) {
	a := &report.Report{}
	paths := func(steps ...int64) []depgraph.Path {
		var out []depgraph.Path
		for i, d := range steps {
			out = append(out, depgraph.Path{Step: int32(i), StartNs: 0, EndNs: d})
		}
		return out
	}
	whole := []depgraph.Path{{Step: -1, EndNs: 100}}
	for _, c := range []struct {
		name    string
		before  []depgraph.Path
		unknown bool
	}{
		{"one step", paths(100), true},
		{"two steps", paths(100, 90), true},
		{"three steps", paths(100, 90, 110), false},
		{"no steps", whole, true},
	} {
		s := whatif.Summarize(c.before)
		_, why := noiseFloor(a, a, c.before, s, s)
		if got := strings.Contains(why, "spread (median absolute deviation over median: unknown"); got != c.unknown {
			t.Errorf("%s: %q; want the spread unknown: %v", c.name, why, c.unknown)
		}
	}
}

// Traces that are not one job's are refused, naming the file: one given twice (by another name
// too: exit 4, as every command refuses it, TestDuplicateInputsRefused), or one whose events lie days from the other's (the importer leaves them out).
func TestWhatIfNotOneJob(t *testing.T) {
	src := filepath.Join("testdata", "hta_small.json")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	// Two days later, in µs: every ts moved.
	later := regexp.MustCompile(`"ts": ([0-9.]+)`).ReplaceAllStringFunc(string(b), func(m string) string {
		v, err := strconv.ParseFloat(strings.TrimPrefix(m, `"ts": `), 64)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf(`"ts": %.2f`, v+2*86400e6)
	})
	dir := t.TempDir()
	other := filepath.Join(dir, "later.json")
	if err := os.WriteFile(other, []byte(later), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{src, other}, exitData, "not a trace of the same job"},
		{[]string{src, "./" + src}, exitData, "./" + src + " is " + src + " given again (the same file)"},
	} {
		code, _, errs := runCLI(t, append([]string{"whatif", "--headless"}, c.args...)...)
		named := false
		for _, a := range c.args {
			named = named || strings.Contains(errs, "xfertop whatif: "+a+":") || strings.Contains(errs, "xfertop whatif: "+a+" is ")
		}
		if code != c.code || !strings.Contains(errs, c.want) || !named {
			t.Errorf("whatif %v: exit %d, %q; want %d naming the file: %q", c.args, code, errs, c.code, c.want)
		}
	}
}

// --kernels-from a trace with no kernel name in common changes nothing: refused as --scale-kernel
// with no match is (exit 2), naming the flag.
func TestWhatIfKernelsFromNoneInCommon(t *testing.T) {
	other := filepath.Join(t.TempDir(), "other.json")
	trace := `{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "elsewhere", "pid": 0, "tid": 7, "ts": 10, "dur": 20, "args": {"device": 0, "stream": 7}}]}`
	if err := os.WriteFile(other, []byte(trace), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI(t, "whatif", "--headless", filepath.Join("testdata", "hta_small.json"), "--kernels-from", other)
	if code != exitUsage || !strings.Contains(errs, "--kernels-from "+other+": no kernel") {
		t.Errorf("exit %d, %q; want %d naming --kernels-from", code, errs, exitUsage)
	}
}

// Errors name the flag that set what is wrong: --set's knob, --hosts (not the topology it made),
// and two flags forcing one thing are refused rather than the last winning.
func TestWhatIfErrorsNameTheFlag(t *testing.T) {
	trace := filepath.Join("testdata", "hta_small.json")
	rec := record(t, "llm-train", 2)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{trace, "--set", "nccl_proto=zz"}, "--set nccl_proto=zz: give nccl_proto=ll|ll128|simple"},
		{[]string{trace, "--set", "nccl_algo=zz"}, "--set nccl_algo=zz: give nccl_algo="},
		{[]string{trace, "--comm", "algo=nvls", "--set", "nccl_algo=ring"}, `--comm "algo=nvls" and --set nccl_algo=ring both force the algorithm`},
		{[]string{trace, "--comm", "proto=ll,proto=simple"}, `--comm "proto=ll" and --comm "proto=simple" both force the protocol`},
		{[]string{rec, "--hosts", "1"}, "--hosts 1: h100x8x2-1hosts (1 hosts × 8 GPUs) has 8 devices, fewer than the trace's 16"},
		{[]string{rec, "--topology", "h100x8"}, "--topology h100x8: h100x8 (1 hosts × 8 GPUs) has 8 devices, fewer than the trace's 16"},
	} {
		code, _, errs := runCLI(t, append([]string{"whatif", "--headless"}, c.args...)...)
		if code != exitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("whatif %v: exit %d, %q; want %d naming %q", c.args, code, errs, exitUsage, c.want)
		}
	}
}

// A trace without steps is one step, in the notes as in the console ("step 1 of 1"), not "steps: 0".
func TestWhatIfNotesWholeInputOneStep(t *testing.T) {
	s := timeline.NewStrings()
	evs := []timeline.Event{{Kind: timeline.KindKernel, Device: 0, Peer: timeline.NoDevice, Stream: 1, Start: 0, End: 10_000, Label: s.ID("gemm")}}
	var plan whatif.Plan
	plan.Events(evs)
	st := whatif.NewStream(s, whatif.Options{}, plan.Params(), whatif.Outputs{})
	if err := st.Events(evs); err != nil {
		t.Fatal(err)
	}
	w, err := st.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, from := range []string{"", "the input marks no step: the whole input is one"} {
		notes := strings.Join(whatifNotes(w, whatif.Summarize(w.Before), from), "\n")
		if !strings.Contains(notes, "steps: 1, the whole input") || strings.Contains(notes, "steps: 0") {
			t.Errorf("stepsFrom %q: notes\n%s\nwant steps: 1, the whole input", from, notes)
		}
	}
}

// Halving every kernel calls no idle, overlap or critical-path make-up row better or worse: only
// rows whose direction means it get the word.
func TestWhatIfVerdictsOnlyWhereDirected(t *testing.T) {
	c := whatifJSON(t, filepath.Join("testdata", "hta_small.json"), "--scale-kernel", "*=0.5")
	directed := map[string]bool{"length per step": true, "exposed communication per step": true}
	for _, r := range c.Rows {
		undirected := r.Section == "idle" || r.Section == "overlap" || r.Section == "critical path" && !directed[r.Name]
		if undirected && r.Better != nil {
			t.Errorf("%s / %s: called better: %v", r.Section, r.Name, *r.Better)
		}
	}
}
