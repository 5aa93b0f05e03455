package importers

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/importers/nsys/nsystest"
)

// An Nsight export without the --step-range range asked for says which range it looked for.
func TestStreamNamesMissingStepRange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.sqlite")
	if err := nsystest.Write(path, nsystest.OldSchema, nsystest.OldRows()...); err != nil {
		t.Fatal(err)
	}
	var got Collect
	res, err := Stream([]string{path}, Options{StepRange: "nosuchrange"}, &got)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Steps, `no NVTX range named "nosuchrange", the --step-range`) {
		t.Errorf("how = %q; want the range named", res.Steps)
	}
}

// TestStepRangeUnusedWarns: a --step-range named that marks no step is said in a warning before
// the steps fall back (inferred, or none): an export without that range, or an input of a format
// the option does not apply to. The default range, or a range that marks the steps, warns of
// nothing.
func TestStepRangeUnusedWarns(t *testing.T) {
	dir := t.TempDir()
	export := filepath.Join(dir, "x.sqlite")
	if err := nsystest.Write(export, nsystest.OldSchema, nsystest.OldRows()...); err != nil {
		t.Fatal(err)
	}
	trace := filepath.Join(dir, "t.json")
	if err := os.WriteFile(trace, []byte(`{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":5,"args":{"device":0,"stream":7}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path, rng, warn string
	}{
		{export, "bogus", `--step-range "bogus": the export has no NVTX range named "bogus": its steps are inferred instead, or none`},
		{export, DefaultStepRange, ""},
		{export, "", ""},
		{trace, "bogus", `--step-range "bogus" applies to Nsight Systems exports only: ignored for a JSON trace`},
		{trace, DefaultStepRange, ""},
	}
	for _, tc := range tests {
		var got Collect
		res, err := Stream([]string{tc.path}, Options{StepRange: tc.rng}, &got)
		if err != nil {
			t.Fatal(err)
		}
		has := slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "--step-range") })
		if tc.warn == "" && has || tc.warn != "" && !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.HasPrefix(w, tc.warn) }) {
			t.Errorf("%s, --step-range %q: warnings %q; want %q", filepath.Base(tc.path), tc.rng, res.Warnings, tc.warn)
		}
	}
}
