package main

import "testing"

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
