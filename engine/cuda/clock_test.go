//go:build cuda

package cuda

import (
	"context"
	"testing"
	"time"

	"gorgonia.org/cu"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/timeline"
)

// Ops timed from successive anchors keep their order and durations: re-anchoring moves no op
// against another.
func TestClockAnchors(t *testing.T) {
	if n, err := cu.NumDevices(); err != nil || n < 1 {
		t.Skipf("no GPU: %v", err)
	}
	topo := engine.Topology{Name: "test", Hosts: 1, GPUsPerHost: 1}
	store := timeline.NewStore(nil)
	be, err := New(Config{Topology: topo, Fit: engine.Fit{Ranks: 1, GPUs: 1}, AnchorEvery: 5 * time.Millisecond}, store, store.Strings)
	if err != nil {
		t.Fatal(err)
	}
	c := engine.NewClient(be, store, engine.DefaultOptions())
	s := c.ComputeStream(0)
	const kernels, each = 40, 2 * time.Millisecond
	for range kernels {
		_ = c.Kernel(s, int64(each), "k")
		_, _ = c.Copy(s, timeline.CopyD2D, 1<<10, -1, false)
		c.HostSleep(0, int64(each), "pace") // launches spread over the anchors
	}
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(be.gpus[0].clock.anchors); n < 4 {
		t.Errorf("%d anchors over ~%v at one per 5ms", n, kernels*each*2)
	}
	var prev timeline.Event
	var n int
	for _, e := range store.Events() {
		if e.Kind != timeline.KindKernel && e.Kind != timeline.KindMemcpy {
			continue
		}
		if e.Kind == timeline.KindKernel {
			n++
			if e.Dur() < int64(each) {
				t.Errorf("kernel %d took %v, asked for %v", n, time.Duration(e.Dur()), each)
			}
		}
		if e.Start < prev.End {
			t.Errorf("op at %d starts before the previous one on its stream ended (%d)", e.Start, prev.End)
		}
		prev = e
	}
	if n != kernels {
		t.Errorf("%d kernels reported, want %d", n, kernels)
	}
}
