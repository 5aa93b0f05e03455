package main

import (
	"path/filepath"
	"strings"
	"testing"
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
