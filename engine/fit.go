package engine

import (
	"fmt"
	"strings"
)

// Fit maps a topology's ranks onto the GPUs a machine has. With fewer GPUs than ranks, rank r runs on
// GPU r mod n: transfers between ranks that share a GPU become same-device copies, and a collective
// whose ranks all share one GPU is a 1-rank collective (no data moves).
type Fit struct {
	Ranks int
	GPUs  int
}

// NewFit checks that gpus can hold ranks: more ranks than GPUs is an error unless fit is set.
func NewFit(ranks, gpus int, fit bool) (Fit, error) {
	switch {
	case gpus <= 0:
		return Fit{}, fmt.Errorf("no GPU found")
	case ranks <= gpus:
		return Fit{Ranks: ranks, GPUs: gpus}, nil
	case !fit:
		return Fit{}, fmt.Errorf("the scenario needs %d GPUs and this machine has %d: choose a smaller --topology, or pass --fit to map %d ranks onto %d GPUs",
			ranks, gpus, ranks, gpus)
	}
	return Fit{Ranks: ranks, GPUs: gpus}, nil
}

// GPU returns the physical GPU rank r runs on.
func (f Fit) GPU(r DeviceID) int { return int(r) % f.GPUs }

// Shared reports whether two ranks run on one GPU.
func (f Fit) Shared(a, b DeviceID) bool { return f.GPU(a) == f.GPU(b) }

// Distinct returns how many GPUs a set of ranks really spans.
func (f Fit) Distinct(ranks []DeviceID) int {
	seen := map[int]bool{}
	for _, r := range ranks {
		seen[f.GPU(r)] = true
	}
	return len(seen)
}

// String says how ranks were mapped, for the report.
func (f Fit) String() string {
	if f.Ranks <= f.GPUs {
		return fmt.Sprintf("%d ranks on %d GPUs, one each", f.Ranks, f.GPUs)
	}
	var parts []string
	for g := range f.GPUs {
		var rs []string
		for r := g; r < f.Ranks; r += f.GPUs {
			rs = append(rs, fmt.Sprint(r))
		}
		parts = append(parts, fmt.Sprintf("GPU %d: ranks %s", g, strings.Join(rs, ",")))
	}
	return fmt.Sprintf("%d ranks on %d GPUs (--fit): %s", f.Ranks, f.GPUs, strings.Join(parts, "; "))
}
