package sim_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/engine/topology"
)

// raggedSizes is an all-to-all's bytes from rank i to rank j over n ranks: uneven, as a
// mixture of experts' token routing is, so that the flows end one by one.
func raggedSizes(n int) [][]int64 {
	sizes := make([][]int64, n)
	for i := range sizes {
		sizes[i] = make([]int64, n)
		for j := range sizes[i] {
			sizes[i][j] = int64(1+(i*7+j*13)%17) << 16
		}
	}
	return sizes
}

// raggedAllToAll runs one ragged all-to-all over every GPU of hosts × 8 H100 and returns the
// simulator, for its solver's counters.
func raggedAllToAll(tb testing.TB, hosts int) *sim.Sim {
	return raggedAllToAllWarned(tb, hosts, nil, 0)
}

// raggedAllToAllWarned is raggedAllToAll with warn told of an all-to-all of more than above
// estimated flow updates (above 0: the simulator's own threshold).
func raggedAllToAllWarned(tb testing.TB, hosts int, warn func(string), above float64) *sim.Sim {
	tb.Helper()
	topo, err := sim.TopologyByName("h100x8x2")
	if err != nil {
		tb.Fatal(err)
	}
	if topo, err = topology.WithHosts(topo, hosts); err != nil {
		tb.Fatal(err)
	}
	log := &countSink{}
	s, err := sim.New(sim.Config{Topology: topo, Seed: 1, Model: sim.ModelOf(topo), Warn: warn}, log, nil)
	if err != nil {
		tb.Fatal(err)
	}
	if above > 0 {
		sim.SetWarnAbove(s, above)
	}
	c := engine.NewClient(s, log, engine.DefaultOptions())
	all := topo.AllDevices()
	if _, err := c.RaggedAllToAll(all, raggedSizes(len(all)), "a2a"); err != nil {
		tb.Fatal(err)
	}
	if err := c.Run(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return s
}

// TestAllToAllSolveLevelsLookAtWhatIsOpen bounds the solver's work on a ragged all-to-all: its
// flows end one by one, each end re-solves the rest, and each solve has many levels (the links'
// counts differ once some flows have ended). A level looks only at the flows and links still
// open, not at the whole component again: at 32 ranks 3.0 M looks instead of 9.6 M (it fails
// when each level looks at the whole component, as it did).
func TestAllToAllSolveLevelsLookAtWhatIsOpen(t *testing.T) {
	s := raggedAllToAll(t, 4)
	visits, spans := sim.SolverVisits(s), sim.SolverSpans(s)
	if spans == 0 {
		t.Fatal("the all-to-all was never solved")
	}
	if 2*visits > spans {
		t.Errorf("the solver's levels looked at %d flows and links, their whole components at each level %d: want at most half", visits, spans)
	}
}

// BenchmarkRaggedAllToAll is one ragged all-to-all over 32 and 64 H100 (4 and 8 hosts): flows
// ended per CPU second, and the solver's looks per run.
func BenchmarkRaggedAllToAll(b *testing.B) {
	for _, hosts := range []int{4, 8} {
		b.Run(fmt.Sprintf("%dranks", hosts*8), func(b *testing.B) {
			var visits uint64
			cpu0, cpuOK := cpuNs()
			for b.Loop() {
				visits += sim.SolverVisits(raggedAllToAll(b, hosts))
			}
			flows := float64(b.N * hosts * 8 * (hosts*8 - 1))
			if cpu1, ok := cpuNs(); cpuOK && ok && cpu1 > cpu0 {
				b.ReportMetric(flows/(float64(cpu1-cpu0)/1e9), "flows/cpu-s")
			}
			b.ReportMetric(float64(visits)/float64(b.N), "looks/op")
		})
	}
}

// TestLongAllToAllIsAnnounced: an all-to-all whose estimated solver work is above the threshold
// is announced once, naming its ranks, flows and cost; one below it is not. 32 ranks are 992
// flows, some 492,032 flow updates.
func TestLongAllToAllIsAnnounced(t *testing.T) {
	for _, tc := range []struct {
		above float64
		want  bool
	}{{400_000, true}, {600_000, false}} {
		var got []string
		raggedAllToAllWarned(t, 4, func(m string) { got = append(got, m) }, tc.above)
		switch {
		case !tc.want && len(got) > 0:
			t.Errorf("above %.0f: warned %q; want nothing", tc.above, got)
		case tc.want && len(got) != 1:
			t.Errorf("above %.0f: %d warnings %q; want 1", tc.above, len(got), got)
		case tc.want:
			for _, w := range []string{"32 ranks", "992 flows", "4.9e+05 flow updates", "of CPU"} {
				if !strings.Contains(got[0], w) {
					t.Errorf("warning %q does not say %q", got[0], w)
				}
			}
		}
	}
}

// TestAllToAllCost: the estimate at the sizes a user runs, and the unit it is said in.
func TestAllToAllCost(t *testing.T) {
	for _, tc := range []struct {
		ranks int
		want  string
	}{{256, "2 minutes"}, {512, "34 minutes"}, {1024, "9 hours"}, {4096, "96 days"}} {
		_, cpu := sim.AllToAllCost(tc.ranks * (tc.ranks - 1))
		if got := sim.RoundCPU(cpu); got != tc.want {
			t.Errorf("%d ranks: %s; want %s", tc.ranks, got, tc.want)
		}
	}
}
