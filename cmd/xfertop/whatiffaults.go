package main

import (
	"fmt"
	"strings"

	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/whatif"
)

// healFlag is --heal SPEC, repeatable: which of a recording's faults the change takes out.
type healFlag []string

func (h *healFlag) String() string { return strings.Join(*h, "; ") }

func (h *healFlag) Set(v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("give a fault of the recording (kind=nic_slow,host=37,nic=3: the keys given must match) or all")
	}
	v = strings.TrimSpace(v)
	if v != "all" {
		for _, kv := range strings.Split(v, ",") {
			if k, _, ok := strings.Cut(strings.TrimSpace(kv), "="); !ok || strings.TrimSpace(k) == "" {
				return fmt.Errorf("%q is not key=value (a fault as --fault writes it: kind=nic_slow,host=37,nic=3; or all)", strings.TrimSpace(kv))
			}
		}
	}
	*h = append(*h, v)
	return nil
}

// runFaults are a recording's faults as the what-if takes them: all of them, those the change
// heals, and those left in it.
type runFaults struct {
	all, healed, kept []fault.Fault
}

// recordedFaults reads the faults a recording's meta lists (--fault, the scenario's own) and
// splits them by --heal. A SPEC matches a fault when every key=value it gives is the fault's
// (kind=nic_slow,host=37 heals every slow NIC of host 37); "all" heals every fault.
func recordedFaults(m timeline.Meta, heal healFlag) (runFaults, error) {
	var rf runFaults
	for i, s := range m.Faults {
		f, err := fault.Parse(s)
		if err != nil {
			return rf, dataError(fmt.Errorf("the recording's fault %d (%q) does not read: %w", i+1, s, err))
		}
		rf.all = append(rf.all, f)
	}
	if len(heal) > 0 && len(rf.all) == 0 {
		return rf, usageError("--heal %s: the recording was made with no fault (its meta lists none): nothing to heal", heal[0])
	}
	used := make([]bool, len(heal))
	for _, f := range rf.all {
		hit := false
		for j, spec := range heal {
			if faultMatches(f, spec) {
				hit, used[j] = true, true
			}
		}
		if !hit {
			rf.kept = append(rf.kept, f)
			continue
		}
		switch f.Kind {
		case fault.HostSlow:
			return rf, usageError("--heal %s: a slow host's delay lies in the host's gaps between launches, which the replay keeps as measured: it cannot take it out", f)
		case fault.Hang, fault.MissingRank:
			return rf, usageError("--heal %s: the recording ends in the %s: the steps it never ran cannot be replayed", f, f.Kind)
		}
		rf.healed = append(rf.healed, f)
	}
	for j, spec := range heal {
		if !used[j] {
			return rf, usageError("--heal %s: no fault of the recording matches it (it has: %s)", spec, faultList(rf.all))
		}
	}
	return rf, nil
}

// faultMatches reports whether every key=value of spec ("all": every fault) is f's as written.
func faultMatches(f fault.Fault, spec string) bool {
	if spec == "all" {
		return true
	}
	have := map[string]string{}
	for _, kv := range strings.Split(f.String(), ",") {
		k, v, _ := strings.Cut(kv, "=")
		have[k] = v
	}
	for _, kv := range strings.Split(spec, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || have[strings.TrimSpace(k)] != strings.TrimSpace(v) {
			return false
		}
	}
	return true
}

// faultList writes faults as the flag reads them, parted by "; ".
func faultList(fs []fault.Fault) string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.String()
	}
	return strings.Join(out, "; ")
}

// applyFaults gives the replays their faults: the unchanged one all of the recording's (it
// reproduces the faulty run), the changed one those --heal leaves (on its topology).
func applyFaults(wo *whatif.Options, rf runFaults) error {
	if len(rf.all) == 0 {
		return nil
	}
	if wo.Recorded.Hosts == 0 {
		if len(rf.healed) > 0 {
			return usageError("--heal %s: the recording's topology is not a built-in one (or not the one its devices ran on), so the replay cannot model its faults, nor take one out", rf.healed[0])
		}
		return nil
	}
	var err error
	if wo.RecordedFaults, err = sim.NewLinkFaults(sim.ModelOf(wo.Recorded), wo.Recorded, rf.all); err != nil {
		return dataError(fmt.Errorf("the recording's faults on its topology %s: %w", wo.Recorded.Name, err))
	}
	topo := wo.Topology
	if topo.Hosts == 0 {
		topo = wo.Recorded
	}
	if wo.Faults, err = sim.NewLinkFaults(sim.ModelOf(topo), topo, rf.kept); err != nil {
		return usageError("the recording's faults on --topology %s: %v (heal them with --heal, or give a topology they fit)", topo.Name, err)
	}
	for _, f := range rf.healed {
		if f.Kind == fault.GPUSlow {
			if err := f.Bind(wo.Recorded); err != nil {
				return dataError(fmt.Errorf("the recording's fault %s on its topology: %w", f, err))
			}
			wo.HealGPU = append(wo.HealGPU, f)
		}
	}
	return nil
}

// faultNotes say which faults the recording had, which the unchanged replay applied and which B
// applied or healed, and how many ops they slowed.
func faultNotes(rf runFaults, w *whatif.Streamed, recorded bool) []string {
	if len(rf.all) == 0 {
		return nil
	}
	if !recorded {
		return []string{"faults: the recording was made with " + faultList(rf.all) + "; its topology is not a built-in one, so the replay cannot model them: ops keep their measured time, faults included"}
	}
	var kept []string
	for _, f := range rf.all {
		if !sim.LinkKind(f.Kind) && f.Kind != fault.GPUSlow {
			kept = append(kept, f.String())
		}
	}
	b := w.Baseline
	n := fmt.Sprintf("faults: the recording was made with %s; the unchanged replay applies them (%d collectives timed with a slowed link; sends and receives, and a throttled GPU's kernels, keep their measured time, the fault's share in it)",
		faultList(rf.all), b.FaultedColl)
	if len(kept) > 0 {
		n += "; " + strings.Join(kept, "; ") + ": kept as measured (a host's launch gaps, a hang, lie in the trace itself)"
	}
	notes := []string{n}
	c := w.Changed
	switch {
	case len(rf.healed) > 0 && len(rf.kept) > 0:
		notes = append(notes, fmt.Sprintf("B heals %s (%d collectives and %d sends re-timed without it, %d kernels at the GPU's unthrottled time) and applies %s",
			faultList(rf.healed), b.FaultedColl-c.FaultedColl, c.RetimedP2P, c.Healed, faultList(rf.kept)))
	case len(rf.healed) > 0:
		notes = append(notes, fmt.Sprintf("B heals %s: the job with the fault removed (%d collectives re-timed without it, %d sends on a healed link re-timed, %d kernels at the GPU's unthrottled time)",
			faultList(rf.healed), b.FaultedColl, c.RetimedP2P, c.Healed))
	default:
		notes = append(notes, fmt.Sprintf("B applies them too (%d collectives and %d sends timed with a slowed link); --heal SPEC takes one out", c.FaultedColl, c.FaultedP2P))
	}
	return notes
}
