package session

import (
	"fmt"
	"time"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/timeline"
)

// faultReach watches, for each injected fault that acts on GPUs (a slow host's launches, a
// throttled GPU's kernels, a NIC's or NVLink port's transfers, a hang), whether one of its GPUs
// ran an op while it was in effect: one aimed at GPUs the scenario leaves idle then cannot show,
// and its silence in every figure would read as a healthy verdict on it. State: a bool a fault.
type faultReach struct {
	faults []fault.Fault
	devs   [][]engine.DeviceID
	byDev  map[int32][]int // device → the faults acting on it
	ran    []bool
}

// newFaultReach watches faults on topo; nil when none acts on a GPU.
func newFaultReach(faults []fault.Fault, topo engine.Topology) *faultReach {
	r := &faultReach{faults: faults, devs: make([][]engine.DeviceID, len(faults)), byDev: map[int32][]int{}, ran: make([]bool, len(faults))}
	for i := range faults {
		r.devs[i] = faults[i].Devices(topo)
		for _, d := range r.devs[i] {
			r.byDev[int32(d)] = append(r.byDev[int32(d)], i)
		}
	}
	if len(r.byDev) == 0 {
		return nil
	}
	return r
}

// Emit marks the faults of e's GPU in effect when e, an op, was launched or started; and a hang
// of e's peer in effect when e (an op, a wait, the watchdog's alert) ended: a rank hung before its
// first op makes no event of its own, its peers' waits on it are how it shows.
func (r *faultReach) Emit(e *timeline.Event) {
	if e.Peer >= 0 && e.Peer != e.Device {
		for _, i := range r.byDev[e.Peer] {
			if f := &r.faults[i]; !r.ran[i] && f.Kind == fault.Hang && f.Active(e.End) {
				r.ran[i] = true
			}
		}
	}
	if !e.Kind.IsBusy() {
		return
	}
	for _, i := range r.byDev[e.Device] {
		f := &r.faults[i]
		if !r.ran[i] && (f.Active(e.Start) || (e.Queued >= 0 && f.Active(e.Queued))) {
			r.ran[i] = true
		}
	}
}

// warnings says which faults that began before the run's end (ns; the later ones are
// unreachedFaults') found their GPUs idle all the while they were in effect.
func (r *faultReach) warnings(end int64) []string {
	if r == nil {
		return nil
	}
	var out []string
	for i := range r.faults {
		f := &r.faults[i]
		if r.ran[i] || len(r.devs[i]) == 0 || f.At > end {
			continue
		}
		when := fmt.Sprintf("from %v to the end", time.Duration(f.At))
		if f.For > 0 {
			when = fmt.Sprintf("from %v for %v", time.Duration(f.At), time.Duration(f.For))
		}
		out = append(out, fmt.Sprintf("fault %s cannot show: %s (host %d) ran nothing while it was in effect (%s): the scenario leaves them idle; aim it at a GPU or host the scenario uses",
			f, devicesText(r.devs[i]), f.Host, when))
	}
	return out
}

// devicesText names a fault's GPUs: "GPU 9", "GPUs 8–15", "GPUs 2, 5".
func devicesText(ds []engine.DeviceID) string {
	if len(ds) == 1 {
		return fmt.Sprintf("GPU %d", ds[0])
	}
	consecutive := true
	for i := 1; i < len(ds); i++ {
		consecutive = consecutive && ds[i] == ds[i-1]+1
	}
	if consecutive {
		return fmt.Sprintf("GPUs %d–%d", ds[0], ds[len(ds)-1])
	}
	s := "GPUs "
	for i, d := range ds {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprint(d)
	}
	return s
}
