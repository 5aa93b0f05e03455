package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/xfertop/xfertop/campaign"
	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/engine/topology"
	"github.com/xfertop/xfertop/scenario"
	"github.com/xfertop/xfertop/units"
)

// diagnoseCmd runs a diagnosis campaign: healthy runs and runs with one random fault each, scored
// against the faults injected (docs/diagnosis.md).
func diagnoseCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("xfertop diagnose", flag.ContinueOnError)
	fs.SetOutput(stderr)
	setUsage(fs, "xfertop diagnose --campaign N [--scenario S] [--topology T] [--hosts H] [flags]")
	n := fs.Int("campaign", 0, "fault trials to run (each one fault drawn from its seed: kind, place, onset, severity)")
	healthy := fs.Int("healthy", -1, "healthy runs beside them (-1: a quarter of the trials, at least 1)")
	sc := fs.String("scenario", "llm-train", "built-in scenario name or path to a scenario file")
	topo := fs.String("topology", "h100x8x4", "built-in topology name or path to a topology file")
	hosts := fs.Int("hosts", 0, "hosts of the topology (0: the topology's own)")
	steps := fs.Int("steps", 4, "steps per run (at least 3)")
	seed := fs.Int64("seed", 1, "the first trial's seed; trial i uses seed+i")
	sets := setFlag{}
	fs.Var(sets, "set", "set a scenario knob, key=value (repeatable), as run's --set: ep=4")
	kinds := fs.String("kinds", "", "fault kinds to draw from, comma-separated (default: all the simulator models, fabric_slow where the topology has more than one rail group, less the kinds the scenario cannot show there; a kind named here is drawn all the same)")
	verbose := fs.Bool("v", false, "print each trial as it ends")
	if err := parseFlags(fs, args); err != nil {
		return flagError(fs, err, stdout)
	}
	if fs.NArg() > 0 {
		// The name invites "diagnose my recording": say where that is.
		return usageError("unexpected argument %q: diagnose measures the diagnosis on a campaign of injected faults (--campaign N); "+
			"to diagnose a recording or trace, run `xfertop analyze %s` (its findings) or `xfertop replay %s` (the console's findings view)",
			fs.Arg(0), fs.Arg(0), fs.Arg(0))
	}
	if *n < 1 {
		return usageError("--campaign %d: give the number of fault trials, 1 or more", *n)
	}
	if *hosts < 0 {
		return usageError("--hosts %d: must not be negative (0: the topology's own)", *hosts)
	}
	if *steps < 3 { // a fault needs a step before its onset and steps after it to be seen
		return usageError("--steps %d: give 3 or more steps per run", *steps)
	}
	if *healthy < -1 {
		return usageError("--healthy %d: give a number of healthy runs, or -1 for a quarter of the trials", *healthy)
	}
	t, err := topology.Load(*topo)
	if err != nil {
		return usageError("--topology: %v", err)
	}
	if *hosts > 0 {
		t.Hosts = *hosts
	}
	f, err := scenario.Load(*sc)
	if err != nil {
		return usageError("--scenario: %v", err)
	}
	if _, err := scenario.Resolve(f, sets, t); err != nil {
		return usageError("--scenario %s on %s: %v", *sc, t.Name, err)
	}
	cfg := campaign.Config{Scenario: f, Knobs: sets, Topology: t, Trials: *n, Healthy: *healthy, Steps: *steps, Seed: *seed}
	if cfg.Healthy < 0 {
		cfg.Healthy = max(1, *n/4)
	}
	if *kinds != "" {
		for _, k := range strings.Split(*kinds, ",") {
			kk, ok := fault.ParseKind(strings.TrimSpace(k))
			if !ok {
				return usageError("--kinds: %q is not a fault kind the simulator draws (%s)", k, kindList())
			}
			if kk == fault.FabricSlow && t.RailGroups() < 2 {
				return usageError("--kinds: fabric_slow needs flows between rail groups: topology %s has %d (a topology file's fabric: kind: rail; docs/topologies.md)",
					t.Name, t.RailGroups())
			}
			cfg.Kinds = append(cfg.Kinds, kk)
		}
	}
	begin := time.Now()
	// A counter rewritten in place on a terminal; to a file or pipe, a line every tenth of the runs.
	tty := isTerminal(stderr)
	cfg.Progress = func(done, total int, tr *campaign.Trial) {
		switch {
		case *verbose:
			fmt.Fprintf(stderr, "%d/%d %s\n", done, total, describe(tr))
		case tty:
			fmt.Fprintf(stderr, "\r%d/%d runs, %s", done, total, time.Since(begin).Round(time.Second))
		case done == total || done%max(1, total/10) == 0:
			fmt.Fprintf(stderr, "%d/%d runs, %s\n", done, total, time.Since(begin).Round(time.Second))
		}
	}
	cfg.Unshown = func(un []campaign.Unshown, leftOut bool) {
		what := "drawn all the same: their trials will be undetectable"
		if leftOut {
			what = "left out of the kinds drawn"
		}
		fmt.Fprintf(stdout, "%s on %s cannot show %s: %s\n", f.Name, t.Name, joinUnshown(un), what)
	}
	name := f.Name
	if len(sets) > 0 {
		name += " (" + sets.String() + ")"
	}
	fmt.Fprintf(stdout, "diagnosis campaign: %s on %s (%d hosts × %d GPUs), %d steps per run, %d fault trials + %d healthy, seeds %d..%d\n",
		name, t.Name, t.Hosts, t.GPUsPerHost, *steps, *n, cfg.Healthy, *seed, *seed+int64(*n+cfg.Healthy)-1)
	trials, err := campaign.Run(ctx, cfg)
	if !*verbose && tty {
		fmt.Fprintln(stderr)
	}
	if err != nil {
		return failure(err)
	}
	campaign.Summarize(trials).Print(stdout)
	fmt.Fprintf(stdout, "wall time %s\n", time.Since(begin).Round(time.Second))
	return nil
}

func kindList() string {
	var s []string
	for _, k := range campaign.DefaultKinds {
		s = append(s, k.String())
	}
	return strings.Join(append(s, "fabric_slow"), ", ")
}

func joinUnshown(un []campaign.Unshown) string {
	s := make([]string, len(un))
	for i, u := range un {
		s[i] = u.String()
	}
	return strings.Join(s, ", ")
}

// describe is one trial on a line. A run a hang stopped early has no slowdown to show: it ended
// before the healthy run did, which says nothing of its pace.
func describe(t *campaign.Trial) string {
	what := "healthy"
	switch {
	case t.Fault != nil && t.Ended != nil:
		what = fmt.Sprintf("%s hung the run (slowdown —)", t.Fault)
	case t.Fault != nil:
		what = fmt.Sprintf("%s slowdown %+.1f%%", t.Fault, 100*t.Slowdown)
	}
	top := "no finding"
	if len(t.Findings) > 0 {
		top = t.Findings[0].String()
		top += fmt.Sprintf(" [at %.3f s, step %d]", float64(t.Findings[0].At)/1e9, t.Findings[0].Step)
	}
	score := ""
	if t.Fault != nil {
		score = fmt.Sprintf(" culprit=%v kind=%v detectable=%v steps=%d", t.Culprit, t.KindRight, t.Detectable, t.LatencySteps)
	}
	return fmt.Sprintf("seed %d: %s -> %s (%s)%s", t.Seed, what, top, units.Counted(len(t.Findings), "finding"), score)
}
