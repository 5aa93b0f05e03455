package campaign

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/engine/topology"
	"github.com/xfertop/xfertop/scenario"
	"github.com/xfertop/xfertop/timeline"
)

// faulty are the built-ins that carry a fault by design: a straggler and a deadlock.
var byDesign = map[string]bool{"straggler": true, "deadlock": true}

// No built-in healthy scenario, on its own topology, gives any finding.
func TestNoFindingsOnHealthyBuiltins(t *testing.T) {
	for _, name := range scenario.BuiltinNames() {
		if byDesign[name] {
			continue
		}
		f, err := scenario.Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		// Its own topology, and four hosts: more peers make a rank's uneven share of the work
		// (a mixture of experts' hot expert) stand out as far as a fault would.
		for _, tn := range []string{orDefault(f.Topology), "h100x8x4"} {
			t.Run(name+"/"+tn, func(t *testing.T) {
				topo, err := sim.TopologyByName(tn)
				if err != nil {
					t.Fatal(err)
				}
				cfg := &Config{Scenario: f, Topology: topo, Steps: min(f.Steps, 4)}
				o, err := run(context.Background(), cfg, 1, nil)
				if err != nil {
					t.Fatal(err)
				}
				if o.ended != nil {
					t.Fatalf("ended: %v", o.ended)
				}
				for _, x := range o.findings {
					t.Errorf("finding on a healthy run: %s", x.String())
				}
			})
		}
	}
}

// Healthy runs with knobs and sizes the built-ins' defaults do not cover: each has no finding.
// llm-train with ep=4 on 16 hosts had "slow link: a link (which: unknown)" at 12% confidence: a
// different pipeline pair's sends 1.33× their peers' in each of two steps (contention with the
// experts' all-to-all), counted as one link slow in both; 15 of 50 healthy runs of its campaign
// had a finding.
func TestNoFindingsOnHealthyVariants(t *testing.T) {
	for _, c := range []struct {
		scenario, topology string
		hosts              int
		knobs              map[string]string
		seeds              int64
	}{
		{"llm-train", "h100x8x2", 16, map[string]string{"ep": "4"}, 12},
		{"llm-train", "h100x8x2", 16, nil, 1},
	} {
		t.Run(fmt.Sprintf("%s/%s/%d hosts/%v", c.scenario, c.topology, c.hosts, c.knobs), func(t *testing.T) {
			f, err := scenario.Builtin(c.scenario)
			if err != nil {
				t.Fatal(err)
			}
			topo, err := sim.TopologyByName(c.topology)
			if err != nil {
				t.Fatal(err)
			}
			if topo, err = topology.WithHosts(topo, c.hosts); err != nil {
				t.Fatal(err)
			}
			cfg := &Config{Scenario: f, Knobs: c.knobs, Topology: topo, Steps: 4}
			for seed := int64(1); seed <= c.seeds; seed++ {
				o, err := run(context.Background(), cfg, seed, nil)
				if err != nil {
					t.Fatal(err)
				}
				if o.ended != nil {
					t.Fatalf("seed %d ended: %v", seed, o.ended)
				}
				for _, x := range o.findings {
					t.Errorf("seed %d: finding on a healthy run: %s", seed, x.String())
				}
			}
		})
	}
}

func orDefault(s string) string {
	if s == "" {
		return "h100x8"
	}
	return s
}

// A small campaign scores what it injects: every trial's fault is the one drawn from its seed, a
// fault that changes nothing is undetectable, and a slow NIC on a 4-host llm-train is named.
func TestCampaignScores(t *testing.T) {
	topo, err := sim.TopologyByName("h100x8x4")
	if err != nil {
		t.Fatal(err)
	}
	f, err := scenario.Builtin("llm-train")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Scenario: f, Topology: topo, Trials: 4, Healthy: 1, Steps: 3, Seed: 3,
		Kinds: []fault.Kind{fault.NICSlow, fault.GPUSlow, fault.PCIeGen}}
	trials, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(trials) != 5 || trials[0].Fault != nil {
		t.Fatalf("%d trials, first %v; want the healthy run first, then 4 faults", len(trials), trials[0].Fault)
	}
	ref, err := run(context.Background(), &cfg, cfg.Seed, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range trials[1:] {
		want := Draw(tr.Seed, topo, cfg.Kinds, ref.steps, &ref.shows.used)
		if tr.Fault.String() != want.String() {
			t.Errorf("seed %d: fault %s; Draw gives %s", tr.Seed, tr.Fault, want)
		}
		if tr.Fault.Kind == fault.PCIeGen && tr.Detectable {
			t.Errorf("seed %d: PCIe a generation down detectable in llm-train, which moves nothing over PCIe", tr.Seed)
		}
		if tr.Fault.Kind != fault.PCIeGen && tr.Detectable && !tr.Culprit {
			t.Errorf("seed %d: %s not named: %v", tr.Seed, tr.Fault, tr.Findings)
		}
	}
	s := Summarize(trials)
	if s.HealthyRuns != 1 || s.All.Trials != 4 {
		t.Errorf("summary counts %d healthy, %d trials", s.HealthyRuns, s.All.Trials)
	}
}

// The straggler built-in (rank 3's host late before every barrier) is named: its host, rank 3.
func TestStragglerBuiltin(t *testing.T) {
	f, err := scenario.Builtin("straggler")
	if err != nil {
		t.Fatal(err)
	}
	topo, err := sim.TopologyByName(orDefault(f.Topology))
	if err != nil {
		t.Fatal(err)
	}
	o, err := run(context.Background(), &Config{Scenario: f, Topology: topo, Steps: 3}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.findings) != 1 || o.findings[0].Rank != 3 || o.findings[0].Kind.String() != "slow host" {
		t.Errorf("findings %v; want one: rank 3's host", o.findings)
	}
}

// A whole host slow to launch on a 4-host llm-train (one pipeline stage per host: its ranks' only
// peers by role are its own and one other host's) is named by its host, its rank unknown, and
// the top finding is scored right; one GPU's host thread slow is still named by its rank.
func TestWholeHostSlow(t *testing.T) {
	topo, err := sim.TopologyByName("h100x8x4")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		spec     string
		hosts    int    // 0: the topology's 4
		rank     int32  // -1: the host, no rank
		scenario string // "": llm-train
	}{
		{"kind=host_slow,host=1,delay=2ms", 0, -1, ""},
		{"kind=host_slow,host=3,delay=50us", 0, -1, ""},
		{"kind=host_slow,host=0,delay=20us,at=1.2s", 0, -1, ""},
		{"kind=host_slow,host=2,gpu=5,delay=50us", 0, 21, ""},
		// 16 hosts: the roles no longer follow the hosts, so the host's 8 ranks stand out alike
		// among their peers by role, and the host is named, not its lowest rank.
		{"kind=host_slow,host=3,delay=200us", 16, -1, ""},
		// crosshost runs on two hosts of any topology: no median of two singles one out, and a
		// host slow to launch made its steps 3× longer while nothing was named.
		{"kind=host_slow,host=1,delay=2ms", 0, -1, "crosshost"},
		{"kind=host_slow,host=0,delay=2ms", 16, -1, "crosshost"},
	} {
		t.Run(strings.TrimSpace(c.scenario+" "+c.spec), func(t *testing.T) {
			ft, err := fault.Parse(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			name := c.scenario
			if name == "" {
				name = "llm-train"
			}
			f, err := scenario.Builtin(name)
			if err != nil {
				t.Fatal(err)
			}
			topo := topo
			if c.hosts > 0 {
				if topo, err = topology.WithHosts(topo, c.hosts); err != nil {
					t.Fatal(err)
				}
			}
			o, err := run(context.Background(), &Config{Scenario: f, Topology: topo, Steps: 4}, 1, []fault.Fault{ft})
			if err != nil {
				t.Fatal(err)
			}
			if len(o.findings) == 0 {
				t.Fatalf("no finding")
			}
			top := o.findings[0]
			if top.Kind.String() != "slow host" || int(top.Host) != ft.Host || top.Rank != c.rank || !culpritRight(&ft, &top, topo) || !kindRight(&ft, &top) ||
				top.Confidence <= 0 || top.Confidence > 1 {
				t.Errorf("top finding %s (rank %d, host %d, confidence %g); want a slow host %d, rank %d, confidence in (0, 1]",
					top.String(), top.Rank, top.Host, top.Confidence, ft.Host, c.rank)
			}
			for i := range o.findings {
				if !culpritRight(&ft, &o.findings[i], topo) {
					t.Errorf("false finding: %s", o.findings[i].String())
				}
			}
		})
	}
}

// A finding's onset is no earlier than the fault's: the first evidence of it in the step that
// showed it (the first slow kernel, the first window its link was slow in), not the step's start,
// which can be long before (the first step begins with the communicators' creation).
func TestOnsetNotBeforeFault(t *testing.T) {
	topo, err := sim.TopologyByName("h100x8x4")
	if err != nil {
		t.Fatal(err)
	}
	f, err := scenario.Builtin("llm-train")
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []string{
		"kind=gpu_slow,host=0,gpu=5,factor=0.5,at=0.3s",
		"kind=gpu_slow,host=0,gpu=5,factor=0.5,at=1.2s",
		"kind=gpu_slow,host=1,gpu=5,factor=0.8,at=1.35s",
		"kind=nic_slow,host=2,nic=3,factor=0.3,at=1.2s",
		"kind=host_slow,host=1,delay=50us,at=1.2s",
	} {
		t.Run(spec, func(t *testing.T) {
			ft, err := fault.Parse(spec)
			if err != nil {
				t.Fatal(err)
			}
			o, err := run(context.Background(), &Config{Scenario: f, Topology: topo, Steps: 4}, 1, []fault.Fault{ft})
			if err != nil {
				t.Fatal(err)
			}
			if len(o.findings) == 0 {
				t.Fatal("no finding")
			}
			top := o.findings[0]
			if !culpritRight(&ft, &top, topo) {
				t.Fatalf("top finding %s; want the fault's place", top.String())
			}
			// A link's evidence is its rate in a 50 ms window: no earlier than the window's start.
			from := ft.At
			if ft.Kind == fault.NICSlow {
				from = ft.At / timeline.LinkWindowNs * timeline.LinkWindowNs
			}
			if top.Onset < from || top.Onset > top.At {
				t.Errorf("onset %d ns, found at %d ns; want from %d ns (the fault's onset, or its link window's start) to the finding", top.Onset, top.At, from)
			}
		})
	}
}

// A rank that never joins its communicator on a 4-host llm-train is one finding, a missing rank
// naming it, at the top: not one per op waiting on it, nor a hang on another communicator whose
// initialisation it never reached.
func TestMissingRankOneFinding(t *testing.T) {
	topo, err := sim.TopologyByName("h100x8x4")
	if err != nil {
		t.Fatal(err)
	}
	f, err := scenario.Builtin("llm-train")
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []string{"kind=missing_rank,host=1,gpu=4", "kind=missing_rank,host=0,gpu=7", "kind=missing_rank,host=3,gpu=0"} {
		t.Run(spec, func(t *testing.T) {
			ft, err := fault.Parse(spec)
			if err != nil {
				t.Fatal(err)
			}
			o, err := run(context.Background(), &Config{Scenario: f, Topology: topo, Steps: 4}, 1, []fault.Fault{ft})
			if err != nil {
				t.Fatal(err)
			}
			rank := int32(ft.Host*topo.GPUsPerHost + ft.GPU)
			if len(o.findings) != 1 || o.findings[0].Kind.String() != "missing rank" || o.findings[0].Rank != rank {
				for _, x := range o.findings {
					t.Log(x.String())
				}
				t.Errorf("%d findings; want one: missing rank %d", len(o.findings), rank)
			}
		})
	}
}

// On a rail fabric of two rail groups, a leaf's ports to the spines degraded are named by their
// leaf, from their rate while busy, in an all-reduce of every rank.
func TestCampaignFabricSlow(t *testing.T) {
	topo, err := topology.Parse("rail.yaml", []byte("base: h100x8x4\nname: rail4\nfabric:\n  kind: rail\n  switch_radix: 4\n  hosts_per_leaf: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := scenario.Builtin("allreduce-sweep")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Scenario: f, Topology: topo, Trials: 3, Healthy: 1, Steps: 3, Seed: 1, Kinds: []fault.Kind{fault.FabricSlow}}
	trials, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(trials[0].Findings) != 0 {
		t.Errorf("healthy run: %v", trials[0].Findings)
	}
	for _, tr := range trials[1:] {
		if tr.Fault.Kind != fault.FabricSlow || !tr.Detectable || !tr.Culprit || !tr.KindRight || !tr.HostRight || tr.False != 0 {
			t.Errorf("seed %d: %s: culprit %v, kind %v, place %v, %d false; findings %v", tr.Seed, tr.Fault, tr.Culprit, tr.KindRight, tr.HostRight, tr.False, tr.Findings)
		}
		// A link's evidence is its rate in a 50 ms window: the onset is the start of the first
		// window it was slow in, the one the fault began in.
		if len(tr.Findings) > 0 && tr.Findings[0].Onset < tr.Fault.At/timeline.LinkWindowNs*timeline.LinkWindowNs {
			t.Errorf("seed %d: %s: onset %d ns, before the window of the fault's", tr.Seed, tr.Fault, tr.Findings[0].Onset)
		}
	}
}

// The kinds a scenario cannot show on its topology are told before the trials, from the healthy
// run: of the defaults they are left out (llm-train moves nothing over PCIe; allreduce-sweep runs
// no kernels), kinds asked for are drawn all the same.
func TestUnshownKinds(t *testing.T) {
	topo, err := sim.TopologyByName("h100x8x4")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		scenario string
		kinds    []fault.Kind
		want     string
		leftOut  bool
	}{
		{"llm-train", nil, "[pcie_gen (it moves nothing over PCIe)]", true},
		{"allreduce-sweep", nil, "[gpu_slow (it runs no kernels) pcie_gen (it moves nothing over PCIe)]", true},
		{"llm-train", []fault.Kind{fault.PCIeGen, fault.NICSlow}, "[pcie_gen (it moves nothing over PCIe)]", false},
		// Its stages only send and receive: a hang stops one at its next send or receive.
		{"pipeline", []fault.Kind{fault.Hang, fault.PCIeGen}, "[pcie_gen (it moves nothing over PCIe)]", false},
	} {
		t.Run(fmt.Sprint(c.scenario, c.kinds), func(t *testing.T) {
			f, err := scenario.Builtin(c.scenario)
			if err != nil {
				t.Fatal(err)
			}
			var told []string
			cfg := Config{Scenario: f, Topology: topo, Trials: 12, Steps: 3, Seed: 1, Kinds: c.kinds,
				Unshown: func(un []Unshown, leftOut bool) { told = append(told, fmt.Sprintf("%v %v", un, leftOut)) }}
			trials, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("%s %v", c.want, c.leftOut); len(told) != 1 || told[0] != want {
				t.Errorf("told %q; want once %q", told, want)
			}
			for _, tr := range trials {
				if c.leftOut && strings.Contains(c.want, tr.Fault.Kind.String()+" ") {
					t.Errorf("seed %d drew %s, which was left out", tr.Seed, tr.Fault)
				}
			}
		})
	}
}

// A pipeline runs on 4 GPUs of 16, each stage its own kernels: the campaign draws its faults on
// the GPUs and NICs the healthy reference used, and every slowed GPU is named (a stage's GPU by
// its own kernels' earlier time, having no peer that runs them). A slow NIC is drawn on one of
// the two NICs the stages' sends cross, but is not asked to be named: two NICs are too few peers
// to compare a rate with (docs/diagnosis.md, the pipeline's table).
func TestCampaignPipeline(t *testing.T) {
	topo, err := sim.TopologyByName("h100x8x2")
	if err != nil {
		t.Fatal(err)
	}
	f, err := scenario.Builtin("pipeline")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Scenario: f, Topology: topo, Trials: 8, Healthy: 1, Steps: 4, Seed: 1,
		Kinds: []fault.Kind{fault.GPUSlow, fault.NICSlow}}
	trials, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	stages := map[int]bool{0: true, 4: true, 8: true, 12: true}
	for _, tr := range trials[1:] {
		on := false
		for _, d := range tr.Fault.Devices(topo) {
			on = on || stages[int(d)]
		}
		if !on {
			t.Errorf("seed %d: %s on no device of the pipeline's stages (0, 4, 8, 12)", tr.Seed, tr.Fault)
		}
		if tr.Fault.Kind == fault.GPUSlow && (!tr.Detectable || !tr.Culprit || !tr.KindRight) {
			t.Errorf("seed %d: %s (slowdown %+.1f%%, detectable %v) not named: %v", tr.Seed, tr.Fault, 100*tr.Slowdown, tr.Detectable, tr.Findings)
		}
	}
	if h := trials[0]; len(h.Findings) > 0 {
		t.Errorf("healthy run: findings %v", h.Findings)
	}
}

// A fault inside a mixture of experts' all-to-all at 128 GPUs changes no run's time and no
// device's busy time by 1% (a NIC's share of the all-to-all ends before the hot expert's does; a
// GPU's kernels are a few milliseconds of a step of communication), so it was scored
// undetectable and left out, whether the diagnosis named it or not. Its kernels' time or its
// links' busy time changed many times over: measurable, and counted. PCIe a generation down
// (nothing moves over PCIe) still changes nothing.
func TestDetectableInsideAllToAll(t *testing.T) {
	topo, err := sim.TopologyByName("h100x8x4")
	if err != nil {
		t.Fatal(err)
	}
	if topo, err = topology.WithHosts(topo, 16); err != nil {
		t.Fatal(err)
	}
	f, err := scenario.Builtin("moe-alltoall")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{Scenario: f, Topology: topo, Steps: 4}
	ref, err := run(context.Background(), cfg, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		spec         string
		kernel, link bool // the change that makes it measurable
	}{
		{"kind=nic_slow,host=5,nic=3,factor=0.1,at=1.2s", false, true},
		{"kind=gpu_slow,host=5,gpu=3,factor=0.8,at=1.2s", true, false},
		{"kind=pcie_gen,host=5,gpu=3", false, false},
	} {
		t.Run(c.spec, func(t *testing.T) {
			ft, err := fault.Parse(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			o, err := run(context.Background(), cfg, 1, []fault.Fault{ft})
			if err != nil {
				t.Fatal(err)
			}
			var tr Trial
			tr.measure(o, ref, topo.GPU.KernelJitter)
			if tr.Slowdown >= 0.01 || tr.BusyChange >= 0.01 {
				t.Fatalf("slowdown %.3f, busy change %.3f; want both under 1%% (the case this is about)", tr.Slowdown, tr.BusyChange)
			}
			if got := tr.KernelChange >= kernelChange(topo.GPU.KernelJitter); got != c.kernel {
				t.Errorf("kernel time change %.3f; want ≥ %.2f: %v", tr.KernelChange, kernelChange(topo.GPU.KernelJitter), c.kernel)
			}
			if got := tr.LinkChange >= 0.01; got != c.link {
				t.Errorf("links' busy time change %.3f; want ≥ 1%%: %v", tr.LinkChange, c.link)
			}
			if tr.Detectable != (c.kernel || c.link) {
				t.Errorf("detectable %v; want %v", tr.Detectable, c.kernel || c.link)
			}
		})
	}
}

// A host slow by 23 µs a launch changes when kernels start, not how long they take; but the
// simulator deals each kernel its jitter in the order kernels start, so the same kernels draw
// other jitter, and a device's kernel time moves by more than 1% (it made this trial of a
// 4-host moe-alltoall "detectable" by its kernel time). It moves less than twice the jitter.
func TestJitterReshuffleNotMeasurable(t *testing.T) {
	topo, err := sim.TopologyByName("h100x8x4")
	if err != nil {
		t.Fatal(err)
	}
	f, err := scenario.Builtin("moe-alltoall")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{Scenario: f, Topology: topo, Steps: 6}
	ref, err := run(context.Background(), cfg, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	ft, err := fault.Parse("kind=host_slow,host=0,delay=22.962us,at=1.024341959s")
	if err != nil {
		t.Fatal(err)
	}
	o, err := run(context.Background(), cfg, 1, []fault.Fault{ft})
	if err != nil {
		t.Fatal(err)
	}
	var tr Trial
	tr.measure(o, ref, topo.GPU.KernelJitter)
	if tr.KernelChange < 0.01 {
		t.Fatalf("kernel time change %.4f; want at least 1%% (the reshuffle this is about)", tr.KernelChange)
	}
	if lim := kernelChange(topo.GPU.KernelJitter); tr.KernelChange >= lim {
		t.Errorf("kernel time change %.4f; want under %.2f (twice the jitter and 1%%)", tr.KernelChange, lim)
	}
}
