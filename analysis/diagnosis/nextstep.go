package diagnosis

import (
	"fmt"

	"github.com/xfertop/xfertop/timeline"
)

// NextStep is what to do about the finding: what to check on its culprit, by kind, and for a
// slow link, GPU or host the step time it costs (what removing it would save). It is made here,
// the one place a verdict is made; the report, its JSON (next_step) and the console only show it.
// Its host and GPU are the host map's, as for Culprit.
func (f *Finding) NextStep() string {
	where := f.Culprit()
	gpu := ""
	if local, ok := f.Local(); f.Rank >= 0 && f.Host >= 0 && ok {
		gpu = fmt.Sprintf("GPU %d on host %s", local, f.host())
	} else if f.Rank >= 0 && f.Host >= 0 {
		gpu = fmt.Sprintf("rank %d's GPU on host %s", f.Rank, f.host())
	} else if f.Rank >= 0 {
		gpu = fmt.Sprintf("rank %d's GPU", f.Rank)
	}
	var do string
	switch f.Kind {
	case SlowLink:
		do = f.linkStep(where, gpu)
	case SlowGPU:
		do = fmt.Sprintf("check %s's clocks, thermals, power and ECC (nvidia-smi -q -d CLOCK,PERFORMANCE,TEMPERATURE,POWER,ECC: its throttle reasons); drain it if it stays throttled", gpuOr(gpu, where))
	case SlowHost:
		host := where
		if f.Host >= 0 {
			host = "host " + f.host()
		}
		do = fmt.Sprintf("check %s's CPUs: other processes competing with the ranks' host threads (top), their CPU and NUMA binding (numactl), the CPU frequency governor and dataloader workers", host)
	case Hang:
		if f.Rank >= 0 {
			do = fmt.Sprintf("dump the stacks of rank %d (%s): its host thread (py-spy dump --pid) and, when its kernel is stuck, its GPU (cuda-gdb, NCCL_DEBUG=INFO); restart the rank if it does not move", f.Rank, gpuOr(gpu, where))
		} else {
			do = fmt.Sprintf("dump the stacks of the %s (py-spy dump --pid; NCCL_DEBUG=INFO for the collective's progress): which of them holds it is not in the events", where)
		}
	case MissingRank:
		do = fmt.Sprintf("check that rank %d's process is alive and reaches its peers (its log with NCCL_DEBUG=INFO: its communicator initialisation; its host's network)", f.Rank)
	case DeadRank:
		do = fmt.Sprintf("check rank %d's process and host (it stopped answering its peers); restart it", f.Rank)
	case RankError:
		do = fmt.Sprintf("read rank %d's error in its log (NCCL_DEBUG=INFO) and fix what it names; restart the rank", f.Rank)
	case Deadlock:
		do = "the ranks wait on each other in a cycle: a program's order of sends, receives or collectives; post them in one order on every rank, or in one group (ncclGroupStart/End)"
	case Mismatch:
		do = "the ranks entered one collective with different ops or sizes: a program's bug; compare the code paths of the ranks that took each side"
	default:
		return ""
	}
	if cost := f.costNote(); cost != "" {
		do += "; " + cost
	}
	return do
}

// linkStep is a slow link's next step, by its class: a NIC's port, an NVLink port, a PCIe link,
// a leaf switch's ports to the spines.
func (f *Finding) linkStep(where, gpu string) string {
	switch f.Link {
	case timeline.PeakNIC:
		if f.Flaps {
			return fmt.Sprintf("%s flaps: reseat or replace its cable and transceiver (its port's link-down count: ibstat, ethtool -S); drain its host until it holds", where)
		}
		return fmt.Sprintf("check %s's port: link state and rate (ibstat, ethtool), its error counters (perfquery: symbol errors, PortXmitWait), its cable; drain its host if it stays degraded", where)
	case timeline.PeakNVLink:
		return fmt.Sprintf("check %s's NVLink: link speed and links down (nvidia-smi nvlink --status -i N), error counters (nvidia-smi nvlink -e); reset or drain the GPU", gpuOr(gpu, where))
	case timeline.PeakPCIe:
		return fmt.Sprintf("check %s's PCIe link: current against max generation and width (nvidia-smi -q -d PCI, lspci -vv); reseat the card, check the slot and BIOS settings", gpuOr(gpu, where))
	case timeline.LinkFabric:
		return fmt.Sprintf("check %s: their port counters (errors, speed) and cabling; route around the leaf or drain its hosts", where)
	}
	return fmt.Sprintf("check the links of %s (NIC port state and rate, NVLink status): which link is slow is not known", where)
}

func gpuOr(gpu, where string) string {
	if gpu != "" {
		return gpu
	}
	return where
}

// costNote says what removing a slow link, GPU or host would save a step: the step time it costs
// (Severity), when measured against a step before it; at most Severity where that step's work is
// known only from the end of its communicators' setup (CostBound); else not known, and the time
// its work lost (capped at the step) is said as that, not as a saving. "" for other kinds.
func (f *Finding) costNote() string {
	if f.Kind != SlowLink && f.Kind != SlowGPU && f.Kind != SlowHost {
		return ""
	}
	switch {
	case f.Hidden && f.CostKnown:
		return fmt.Sprintf("its cost is hidden behind other work now (fixing it saves no step time yet); it would cost the step up to %s were nothing overlapping it", fmtNs(f.Exposure))
	case f.Hidden && f.CostBound:
		return fmt.Sprintf("fixing it saves at most the step's growth its evidence states now, the rest of its cost hidden behind other work; it would cost the step up to %s were nothing overlapping it", fmtNs(f.Exposure))
	case f.Hidden:
		return fmt.Sprintf("what it costs the step now is not known (no clean step before to compare with); it would cost the step up to %s were nothing overlapping it", fmtNs(f.Exposure))
	case f.CostKnown && f.Severity == 0:
		return "it costs the step nothing measurable: fixing it saves no step time now"
	case f.CostKnown:
		return fmt.Sprintf("fixing it saves about %s a step (the step time it costs)", fmtNs(f.Severity))
	case f.CostBound:
		return fmt.Sprintf("fixing it saves at most %s a step (a bound: the step's growth over the shortest step before it, whose work is known only from the end of its communicators' setup)", fmtNs(f.Severity))
	}
	lost := "its transfers took up to " + fmtNs(f.Severity) + " longer"
	switch f.Kind {
	case SlowGPU:
		lost = "its kernels took up to " + fmtNs(f.Severity) + " longer"
	case SlowHost:
		lost = "its launches came up to " + fmtNs(f.Severity) + " later"
	}
	return fmt.Sprintf("what fixing it saves a step is not known: no step before it to compare with (%s; other work may hide much of that)", lost)
}
