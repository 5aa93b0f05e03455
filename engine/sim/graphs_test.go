package sim_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/timeline"
)

// since returns the events of kind k emitted from index from on.
func since(store *timeline.Store, from int, k timeline.Kind) []timeline.Event {
	var out []timeline.Event
	for _, e := range store.Events()[from:] {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// A replayed graph pays one launch (host.graph_launch, 2.5 µs on h100x8) where the same ops
// launched one by one pay one each (host.launch, 3 µs): 20 kernels of 1 µs are host bound eagerly
// (20 × 3 µs + 1 µs) and device bound replayed (2.5 µs + 20 × 1 µs).
func TestGraphReplayCostsOneLaunch(t *testing.T) {
	const n, kern = 20, 1_000
	issue := func(c *engine.Client) {
		s := c.ComputeStream(0)
		for range n {
			if err := c.Kernel(s, kern, "k"); err != nil {
				t.Fatal(err)
			}
		}
	}
	c, store := newClient(t, "h100x8", engine.DefaultOptions())
	t0 := c.Backend().Now()
	issue(c)
	run(t, c)
	if got, want := c.Backend().Now()-t0, int64(n*3_000+kern); got != want {
		t.Errorf("eager: %d kernels took %d ns, want %d (one 3 µs launch each)", n, got, want)
	}

	if err := c.BeginCapture("step"); err != nil {
		t.Fatal(err)
	}
	issue(c)
	g, err := c.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	if g.Nodes() != n {
		t.Fatalf("graph holds %d nodes, want %d", g.Nodes(), n)
	}
	for launch := range 2 {
		from := len(store.Events())
		t0 = c.Backend().Now()
		if err := c.LaunchGraph(g); err != nil {
			t.Fatal(err)
		}
		run(t, c)
		if got, want := c.Backend().Now()-t0, int64(2_500+n*kern); got != want {
			t.Errorf("launch %d: %d kernels took %d ns, want %d (one 2.5 µs graph launch)", launch, n, got, want)
		}
		gl := since(store, from, timeline.KindGraphLaunch)
		if len(gl) != 1 || gl[0].Aux != n || gl[0].Dur() != 2_500 || gl[0].Device != 0 {
			t.Fatalf("launch %d: graph launch events %+v, want one of 2.5 µs with Aux %d", launch, gl, n)
		}
		ks := since(store, from, timeline.KindKernel)
		if len(ks) != n {
			t.Fatalf("launch %d: %d kernels, want %d", launch, len(ks), n)
		}
		for _, k := range ks {
			if !k.Captured() || k.Queued != gl[0].End {
				t.Fatalf("launch %d: kernel %+v not marked captured, or not queued at the launch's end %d", launch, k, gl[0].End)
			}
		}
	}
}

// Inside a graph the captured dependencies hold at every replay: a stream waiting on an event
// recorded inside the region waits for it again, and sends pair with their receives.
func TestGraphKeepsDependencies(t *testing.T) {
	c, store := newClient(t, "h100x8", engine.DefaultOptions())
	warm(t, c, []engine.DeviceID{0, 1})
	if err := c.BeginCapture("step"); err != nil {
		t.Fatal(err)
	}
	comp, x := c.ComputeStream(0), c.TransferStream(0)
	if err := c.Kernel(comp, 500_000, "produce"); err != nil {
		t.Fatal(err)
	}
	ev, _ := c.Record(comp)
	_ = c.WaitEvent(x, ev)
	if _, err := c.Send(x, 1, 16<<20, 7); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Recv(c.TransferStream(1), 0, 16<<20, 7); err != nil {
		t.Fatal(err)
	}
	g, err := c.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	for launch := range 3 {
		from := len(store.Events())
		if err := c.LaunchGraph(g); err != nil {
			t.Fatal(err)
		}
		run(t, c)
		k := since(store, from, timeline.KindKernel)
		sends := since(store, from, timeline.KindSend)
		recvs := since(store, from, timeline.KindRecv)
		if len(k) != 1 || len(sends) != 1 || len(recvs) != 1 {
			t.Fatalf("launch %d: %d kernels, %d sends, %d recvs; want one each", launch, len(k), len(sends), len(recvs))
		}
		if sends[0].Start < k[0].End {
			t.Errorf("launch %d: send started at %d, before the kernel it waits for ended at %d", launch, sends[0].Start, k[0].End)
		}
		if sends[0].Op != recvs[0].Op || !sends[0].Captured() || !recvs[0].Captured() {
			t.Errorf("launch %d: send %+v and recv %+v not paired or not marked captured", launch, sends[0], recvs[0])
		}
	}
	if g.Launches() != 3 {
		t.Errorf("graph launched %d times, want 3", g.Launches())
	}
}

// What a CUDA graph cannot hold is refused at EndCapture, naming what and where.
func TestGraphCaptureRefusals(t *testing.T) {
	cases := []struct {
		name   string
		region func(t *testing.T, c *engine.Client)
		kind   error
		want   string
	}{
		{"host wait", func(t *testing.T, c *engine.Client) {
			ev, _ := c.Record(c.ComputeStream(0))
			c.HostWait(0, ev)
		}, engine.ErrCaptureUnsupported, "a host wait on device 0"},
		{"host work", func(t *testing.T, c *engine.Client) { c.HostSleep(1, 1000, "loader") }, engine.ErrCaptureUnsupported, "host work on device 1"},
		{"new communicator", func(t *testing.T, c *engine.Client) {
			_, _ = c.Send(c.TransferStream(2), 3, 1<<20, 9)
		}, engine.ErrCaptureUnsupported, "communicator creation on device 2"},
		{"sync", func(t *testing.T, c *engine.Client) {
			_ = c.Kernel(c.ComputeStream(0), 10, "k")
			if err := c.Run(context.Background()); !errors.Is(err, engine.ErrCaptureUnsupported) {
				t.Errorf("Run inside a capture returned %v, want a refusal", err)
			}
		}, engine.ErrCaptureUnsupported, "a run"},
		{"batching window", func(t *testing.T, c *engine.Client) {
			_, _ = c.Batch(engine.OpSend, c.TransferStream(0), 1, 1<<20, 5)
		}, engine.ErrCaptureUnsupported, "a batching window on device 0"},
		{"outside event", func(t *testing.T, c *engine.Client) {
			_ = c.WaitEvent(c.ComputeStream(1), c.Backend().NewEvent())
		}, engine.ErrCaptureIsolation, "recorded outside the region"},
		{"empty", func(t *testing.T, c *engine.Client) {}, engine.ErrCaptureMisuse, "nothing was launched"},
		{"nested", func(t *testing.T, c *engine.Client) {
			if err := c.BeginCapture("inner"); !errors.Is(err, engine.ErrCaptureMisuse) {
				t.Errorf("nested BeginCapture returned %v", err)
			}
			_ = c.Kernel(c.ComputeStream(0), 10, "k")
			if err := c.LaunchGraph(&engine.Graph{Name: "x"}); !errors.Is(err, engine.ErrCaptureMisuse) {
				t.Errorf("LaunchGraph inside a capture returned %v", err)
			}
		}, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newClient(t, "h100x8", engine.DefaultOptions())
			warm(t, c, []engine.DeviceID{0, 1})
			if err := c.BeginCapture("step"); err != nil {
				t.Fatal(err)
			}
			tc.region(t, c)
			g, err := c.EndCapture()
			if tc.kind == nil {
				if err != nil {
					t.Fatalf("EndCapture: %v", err)
				}
				return
			}
			if g != nil || !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `"step"`) {
				t.Fatalf("EndCapture = %v, %v; want a %v naming %q and the region", g, err, tc.kind, tc.want)
			}
			if c.Capturing() {
				t.Fatal("the capture is still open after EndCapture")
			}
		})
	}
}

// A topology file without host.graph_launch replays a graph for one kernel launch (host.launch).
func TestGraphLaunchCostDefault(t *testing.T) {
	tp, err := sim.TopologyByName("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	tp.Costs.GraphLaunchNs = 0
	tp.Costs.LaunchNs = 7_000
	c, store := newClientOf(t, tp, engine.DefaultOptions())
	if err := c.BeginCapture("r"); err != nil {
		t.Fatal(err)
	}
	_ = c.Kernel(c.ComputeStream(0), 1_000, "k")
	_ = c.Kernel(c.ComputeStream(0), 1_000, "k")
	g, err := c.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.LaunchGraph(g); err != nil {
		t.Fatal(err)
	}
	run(t, c)
	if gl := since(store, 0, timeline.KindGraphLaunch); len(gl) != 1 || gl[0].Dur() != 7_000 {
		t.Fatalf("graph launches %+v, want one of host.launch's 7 µs", gl)
	}
}
