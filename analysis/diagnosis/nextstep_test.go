package diagnosis

import (
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis/hostmap"
	"github.com/xfertop/xfertop/timeline"
)

// Each finding's next step says what to check on its culprit, by kind, and for a slow link, GPU
// or host what fixing it saves a step.
func TestNextStep(t *testing.T) {
	for _, c := range []struct {
		f    Finding
		want []string
	}{
		{f: Finding{Kind: SlowLink, Rank: 299, Host: 37, Link: timeline.PeakNIC, Severity: 31_100_000, CostKnown: true},
			want: []string{"check host 37 GPU 3 NIC's port: link state and rate (ibstat", "fixing it saves about 31.1 ms a step"}},
		{f: Finding{Kind: SlowLink, Rank: 11, Host: 1, Link: timeline.PeakNIC, Flaps: true, Severity: 50 * ms},
			want: []string{"host 1 GPU 3 NIC flaps: reseat or replace its cable and transceiver", "what fixing it saves a step is not known: no step before it to compare with (its transfers took up to 50.0 ms longer"}},
		{f: Finding{Kind: SlowLink, Rank: 43, Host: 5, Link: timeline.PeakNIC, Severity: 35 * ms, CostBound: true},
			want: []string{"fixing it saves at most 35.0 ms a step (a bound: the step's growth over the shortest step before it, whose work is known only from the end of its communicators' setup)"}},
		{f: Finding{Kind: SlowHost, Rank: 9, Host: 1, Link: -1, Severity: 30 * ms},
			want: []string{"not known: no step before it to compare with (its launches came up to 30.0 ms later"}},
		{f: Finding{Kind: SlowLink, Rank: 299, Host: 37, Link: timeline.PeakNVLink, CostKnown: true},
			want: []string{"check GPU 3 on host 37's NVLink", "nvidia-smi nvlink", "costs the step nothing measurable"}},
		{f: Finding{Kind: SlowGPU, Rank: 8, Host: 1, Link: -1, Severity: 400 * ms, CostKnown: true},
			want: []string{"check GPU 0 on host 1's clocks, thermals, power and ECC (nvidia-smi", "saves about 400.0 ms a step"}},
		{f: Finding{Kind: SlowHost, Rank: -1, Host: 37, Link: -1, Severity: 141 * ms, CostKnown: true},
			want: []string{"check host 37's CPUs", "saves about 141.0 ms a step"}},
		{f: Finding{Kind: Hang, Rank: 299, Host: 37, Link: -1, Severity: 8e9},
			want: []string{"dump the stacks of rank 299 (GPU 3 on host 37): its host thread (py-spy dump --pid)"}},
		{f: Finding{Kind: MissingRank, Rank: 11, Host: 1, Link: -1}, want: []string{"check that rank 11's process is alive"}},
		{f: Finding{Kind: Deadlock, Rank: 3, Host: 0, Link: -1, Cycle: []int32{3, 5}}, want: []string{"post them in one order on every rank"}},
	} {
		// Placed as the diagnosis places its findings: on a job of 8 GPUs per host.
		one := []Finding{c.f}
		New(hostmap.ByID(8)).place(one)
		c.f = one[0]
		got := c.f.NextStep()
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: NextStep = %q; want it to hold %q", c.f.String(), got, w)
			}
		}
		if !c.f.CostKnown && !c.f.CostBound && strings.Contains(got, "saves up to") {
			t.Errorf("an unknown cost said as a saving: %q", got)
		}
		if c.f.Kind == Hang && strings.Contains(got, "saves") {
			t.Errorf("a hang's next step speaks of step time saved: %q", got)
		}
	}
}
