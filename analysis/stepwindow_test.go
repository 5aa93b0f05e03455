package analysis

import (
	"slices"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// TestIdleInSteps: device 0 runs a kernel, then waits 890 ns for its communicator (the first
// step's setup, 0–900), then two steps' kernels. Idle is 930 ns in all, but inside the steps, the
// setup left out (900–1100), only the gaps 950–980 and 1050–1060: 40 ns, on the device and on its
// stream. The answer does not depend on whether a step is marked before its ops (an importer
// sorting by start) or after them (the simulator marks a step when it ends).
func TestIdleInSteps(t *testing.T) {
	ops := []timeline.Event{kern(0, 1, 0, 10), commInitEv(1, 0, 10, 900), kern(0, 1, 900, 950), kern(0, 1, 980, 1000)}
	step1 := rankStep(1, timeline.NoDevice, 0, 1000)
	later := []timeline.Event{kern(0, 1, 1000, 1050), kern(0, 1, 1060, 1100)}
	step2 := rankStep(2, timeline.NoDevice, 1000, 1100)
	orders := map[string][]timeline.Event{
		"steps last":  slices.Concat(ops, []timeline.Event{step1}, later, []timeline.Event{step2}),
		"steps first": slices.Concat([]timeline.Event{step1}, ops, []timeline.Event{step2}, later),
	}
	for name, evs := range orders {
		t.Run(name, func(t *testing.T) {
			a := New(timeline.Meta{})
			for i := range evs {
				a.Emit(&evs[i])
			}
			r := a.Result(nil)
			if r.Steps.SetupNs != 900 || r.Breakdown.IdleNs != 930 {
				t.Fatalf("setup, idle = %d, %d; want 900, 930", r.Steps.SetupNs, r.Breakdown.IdleNs)
			}
			in := r.Breakdown.InSteps
			if in == nil {
				t.Fatal("InSteps = nil; want the idle inside the steps")
			}
			if in.DeviceNs != 40 || in.StreamNs != 40 || in.ByCause["kernel_wait"] != 40 {
				t.Errorf("inside the steps: device %d, stream %d, by cause %v; want 40, 40, kernel_wait 40", in.DeviceNs, in.StreamNs, in.ByCause)
			}
		})
	}
}

// TestIdleInStepsOutside: idle before the first step, between steps and after the last is not
// inside them; a run without steps has no figure.
func TestIdleInStepsOutside(t *testing.T) {
	evs := []timeline.Event{
		kern(0, 1, 0, 10), kern(0, 1, 100, 150), rankStep(1, timeline.NoDevice, 100, 200), kern(0, 1, 190, 200),
		kern(0, 1, 300, 320), rankStep(2, timeline.NoDevice, 300, 400), kern(0, 1, 350, 400), kern(0, 1, 500, 510),
	}
	a := New(timeline.Meta{})
	for i := range evs {
		a.Emit(&evs[i])
	}
	in := a.Result(nil).Breakdown.InSteps
	// Inside: 150–190 (40) and 320–350 (30).
	if in == nil || in.DeviceNs != 70 || in.StreamNs != 70 {
		t.Errorf("inside the steps = %+v; want device 70, stream 70", in)
	}
	b := New(timeline.Meta{})
	for _, e := range []timeline.Event{kern(0, 1, 0, 10), kern(0, 1, 100, 150)} {
		b.Emit(&e)
	}
	if in := b.Result(nil).Breakdown.InSteps; in != nil {
		t.Errorf("without steps, InSteps = %+v; want nil (unknown)", in)
	}
}
