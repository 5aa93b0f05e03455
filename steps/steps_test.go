package steps

import (
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

func rng(name string, start, end int64) Range {
	return Range{Name: name, Start: start, End: end, Pid: 1}
}

// repeat is n ranges named name, one every period from at, each lasting dur.
func repeat(name string, n int, at, period, dur int64) []Range {
	var rs []Range
	for i := range n {
		rs = append(rs, rng(name, at+int64(i)*period, at+int64(i)*period+dur))
	}
	return rs
}

func TestInfer(t *testing.T) {
	iv := func(s, e int64) timeline.Interval { return timeline.Interval{Start: s, End: e} }
	for _, tc := range []struct {
		name   string
		ranges []Range
		want   []timeline.Interval
		how    string // part of Found.How; "" when none is found
	}{
		{"an iteration marker, twice", append(repeat("FSDP::root_pre_forward", 2, 0, 100, 5), repeat("layer", 8, 0, 25, 20)...),
			[]timeline.Interval{iv(0, 100)}, `"FSDP::root_pre_forward", 2 times (named like an iteration marker)`},
		{"a range that only repeats is no iteration (it may be a layer)", repeat("fwd_bwd", 4, 10, 100, 90), nil, ""},
		{"the process with every iteration", append(repeat("train_step", 3, 0, 100, 90), Range{Name: "train_step", Start: 5, End: 6, Pid: 2}),
			[]timeline.Interval{iv(0, 100), iv(100, 200)}, `"train_step", 3 times`},
		{"nested ranges of one name count once", append(repeat("iteration", 3, 0, 100, 90), rng("iteration", 5, 6)),
			[]timeline.Interval{iv(0, 100), iv(100, 200)}, `"iteration", 3 times`},
		{"no ranges", nil, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, ok := Infer(tc.ranges)
			if ok != (tc.how != "") {
				t.Fatalf("found %v (%s); want %v", ok, f.How, tc.how != "")
			}
			if !ok {
				return
			}
			if !strings.Contains(f.How, tc.how) {
				t.Errorf("how = %q; want it to say %q", f.How, tc.how)
			}
			if len(f.Steps) != len(tc.want) {
				t.Fatalf("steps %v; want %v", f.Steps, tc.want)
			}
			for i := range f.Steps {
				if f.Steps[i] != tc.want[i] {
					t.Errorf("step %d = %v; want %v", i, f.Steps[i], tc.want[i])
				}
			}
		})
	}
}
