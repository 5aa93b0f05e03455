package scenario

import (
	"strings"
	"testing"
)

func TestParseFaults(t *testing.T) {
	base := "name: x\nphases:\n  - copy_sweep: {}\n"
	for _, c := range []struct {
		faults, want, err string
	}{
		{faults: "faults:\n  - {kind: nic_slow, host: 1, nic: 0, factor: 0.3, at: 2s}\n", want: "kind=nic_slow,host=1,nic=0,factor=0.3,at=2s"},
		{faults: "faults:\n  - kind=gpu_slow,host=0,gpu=1,factor=0.5\n", want: "kind=gpu_slow,host=0,gpu=1,factor=0.5,at=0s"},
		{faults: "faults: nic_slow\n", err: "x.yaml:4: faults must be a list"},
		{faults: "faults:\n  - {kind: nic_slow, host: 1}\n", err: "x.yaml:5: fault: nic_slow needs host, nic, factor"},
		{faults: "faults:\n  - {kind: gpu_slow, host: [1]}\n", err: "x.yaml:5: fault key host must be a single value"},
	} {
		f, err := Parse("x.yaml", []byte(base+c.faults))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v; want %q", c.faults, err, c.err)
			}
			continue
		}
		if err != nil || len(f.Faults) != 1 || f.Faults[0].String() != c.want {
			t.Errorf("%q: %v %v; want %s", c.faults, f, err, c.want)
		}
	}
}
