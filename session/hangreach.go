package session

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/timeline"
)

// hangReach watches, for each hang fault, which NCCL ops its rank posted from the fault's onset
// on. A run that completed with a hang fault in effect never met the op the hang stops at (a
// coll= the scenario does not run then, or a rank idle after the onset); listed as injected and
// silent, it would read as "no hang seen". The ops it did post say why. State: a small set of op
// names a hang fault.
type hangReach struct {
	faults []fault.Fault
	dev    []int32           // each fault's rank
	seen   []map[string]bool // each fault's ops posted from its onset on
	busy   []bool            // each fault's rank ran anything (an op) from its onset on
}

// newHangReach watches the hang faults of faults on topo; nil when there are none.
func newHangReach(faults []fault.Fault, topo engine.Topology) *hangReach {
	r := &hangReach{}
	for _, f := range faults {
		if f.Kind != fault.Hang {
			continue
		}
		if f.GPU < -1 { // rank=N, resolved by the engine's Bind on its own copy
			if err := f.Bind(topo); err != nil {
				continue
			}
		}
		r.faults = append(r.faults, f)
		r.dev = append(r.dev, int32(f.Device(topo)))
		r.seen = append(r.seen, map[string]bool{})
		r.busy = append(r.busy, false)
	}
	if len(r.faults) == 0 {
		return nil
	}
	return r
}

// Emit notes e's op if it is an NCCL op a hang fault's rank posted from the fault's onset on.
func (r *hangReach) Emit(e *timeline.Event) {
	if !e.Kind.IsBusy() {
		return
	}
	posted := e.Start
	if e.Queued > 0 {
		posted = e.Queued
	}
	for i := range r.faults {
		if r.dev[i] == e.Device && r.faults[i].Active(posted) {
			r.busy[i] = true
		}
	}
	var name string
	switch e.Kind {
	case timeline.KindCollective:
		name = timeline.CollOp(e.Sub).String()
	case timeline.KindSend:
		name = "send"
	case timeline.KindRecv:
		name = "recv"
	default:
		return
	}
	for i := range r.faults {
		if r.dev[i] == e.Device && r.faults[i].Active(posted) {
			r.seen[i][name] = true
		}
	}
}

// warnings says which hang faults never took effect in a run that completed (a hang that took
// effect ends the run early: the watchdog or a deadlock), among those that began before its end
// (ns; the later ones are unreachedFaults'). A rank that ran nothing at all from the onset on is
// left to faultReach's warning (its GPU idle all the while), so as not to say it twice.
func (r *hangReach) warnings(completed bool, end int64) []string {
	if r == nil || !completed {
		return nil
	}
	var out []string
	for i := range r.faults {
		f := &r.faults[i]
		if f.At > end || !r.busy[i] {
			continue
		}
		ran := "no NCCL op (only other work)"
		if len(r.seen[i]) > 0 {
			names := make([]string, 0, len(r.seen[i]))
			for n := range r.seen[i] {
				names = append(names, n)
			}
			sort.Strings(names)
			ran = strings.Join(names, ", ")
		}
		out = append(out, fmt.Sprintf("fault %s never took effect: rank %d (host %d GPU %d) posted no %s from its onset (%v) to the run's end; it posted: %s",
			f, r.dev[i], f.Host, f.GPU, hangTargetText(f), time.Duration(f.At), ran))
	}
	return out
}

// hangTargetText names the op a hang fault stops at, for people.
func hangTargetText(f *fault.Fault) string {
	switch f.Target {
	case fault.HangColl:
		return f.Coll.String()
	case fault.HangSend:
		return "send"
	case fault.HangRecv:
		return "recv"
	case fault.HangSendRecv:
		return "send or recv"
	case fault.HangAnyOp:
		return "NCCL op"
	}
	return "collective (nor, having posted none before, a send or recv)"
}
