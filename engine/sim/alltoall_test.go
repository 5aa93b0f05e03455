package sim_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

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
// simulator, for its solver's counters. hosts < 0 is one node of −hosts × 8 GPUs, where NCCL runs
// every peer at once: the solver's largest components.
func raggedAllToAll(tb testing.TB, hosts int) *sim.Sim {
	return raggedAllToAllWarned(tb, hosts, nil, 0)
}

// raggedAllToAllWarned is raggedAllToAll with warn told of an all-to-all whose estimated CPU is
// more than above (above 0: the simulator's own threshold).
func raggedAllToAllWarned(tb testing.TB, hosts int, warn func(string), above time.Duration) *sim.Sim {
	tb.Helper()
	topo, err := sim.TopologyByName("h100x8x2")
	if err != nil {
		tb.Fatal(err)
	}
	if hosts < 0 {
		topo.Hosts, topo.GPUsPerHost = 1, -hosts*8
	} else if topo, err = topology.WithHosts(topo, hosts); err != nil {
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
// open, not at the whole component again (it fails when each level looks at the whole component,
// as it did). 32 ranks on one node: every peer at once, one component.
func TestAllToAllSolveLevelsLookAtWhatIsOpen(t *testing.T) {
	s := raggedAllToAll(t, -4)
	visits, spans := sim.SolverVisits(s), sim.SolverSpans(s)
	if spans == 0 {
		t.Fatal("the all-to-all was never solved")
	}
	if 2*visits > spans {
		t.Errorf("the solver's levels looked at %d flows and links, their whole components at each level %d: want at most half", visits, spans)
	}
}

// BenchmarkRaggedAllToAll is one ragged all-to-all over 32 and 64 H100 on one node (every peer at
// once) and over 64, 128 and 1,024 on hosts of 8 (NCCL's batches): flows ended per CPU second,
// and the solver's looks per run.
//
//	go test ./engine/sim -run '^$' -bench RaggedAllToAll -benchtime 1x -count 3
func BenchmarkRaggedAllToAll(b *testing.B) {
	for _, hosts := range []int{-4, -8, 8, 16, 128} {
		n := max(hosts, -hosts) * 8
		name := fmt.Sprintf("%dranks-hosts", n)
		if hosts < 0 {
			name = fmt.Sprintf("%dranks-1node", n)
		}
		b.Run(name, func(b *testing.B) {
			var visits uint64
			cpu0, cpuOK := cpuNs()
			for b.Loop() {
				visits += sim.SolverVisits(raggedAllToAll(b, hosts))
			}
			flows := float64(b.N * n * (n - 1))
			if cpu1, ok := cpuNs(); cpuOK && ok && cpu1 > cpu0 {
				b.ReportMetric(flows/(float64(cpu1-cpu0)/1e9), "flows/cpu-s")
			}
			b.ReportMetric(float64(visits)/float64(b.N), "looks/op")
		})
	}
}

// TestLongAllToAllIsAnnounced: an all-to-all whose estimated CPU is above the threshold is
// announced once, naming its ranks, flows, how they run and the cost; one below it is not. 32
// ranks on 4 hosts are 992 flows in NCCL's batches, some 4 ms.
func TestLongAllToAllIsAnnounced(t *testing.T) {
	for _, tc := range []struct {
		above time.Duration
		want  bool
	}{{3 * time.Millisecond, true}, {5 * time.Millisecond, false}} {
		var got []string
		raggedAllToAllWarned(t, 4, func(m string) { got = append(got, m) }, tc.above)
		switch {
		case !tc.want && len(got) > 0:
			t.Errorf("above %s: warned %q; want nothing", tc.above, got)
		case tc.want && len(got) != 1:
			t.Errorf("above %s: %d warnings %q; want 1", tc.above, len(got), got)
		case tc.want:
			for _, w := range []string{"32 ranks", "992 flows", "NCCL's batches", "about 4ms of CPU"} {
				if !strings.Contains(got[0], w) {
					t.Errorf("warning %q does not say %q", got[0], w)
				}
			}
		}
	}
}

// TestAllToAllCost: the estimate at the sizes a user runs, and the unit it is said in. Across
// nodes (NCCL's batches) 1,024 ranks are seconds and 4,096 a minute; on one node (every peer at
// once) the cost grows with the fourth power of the ranks.
func TestAllToAllCost(t *testing.T) {
	for _, tc := range []struct {
		ranks   int
		batched bool
		want    string
	}{
		{1024, true, "4.19s"}, {4096, true, "1 minute"}, {8192, true, "4 minutes"}, {16384, true, "18 minutes"},
		{72, false, "769ms"}, {256, false, "2 minutes"}, {1024, false, "9 hours"}, {4096, false, "96 days"},
	} {
		cpu := sim.AllToAllCost(tc.ranks*(tc.ranks-1), tc.batched)
		if got := sim.RoundCPU(cpu); got != tc.want {
			t.Errorf("%d ranks (batched %v): %s; want %s", tc.ranks, tc.batched, got, tc.want)
		}
	}
}
