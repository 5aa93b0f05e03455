package sim_test

import (
	"context"
	"math"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/timeline"
)

// newClient builds a client over a fresh simulator of the named topology (its own calibration), storing events in a Store.
func newClient(t testing.TB, topo string, opts engine.Options) (*engine.Client, *timeline.Store) {
	t.Helper()
	tp, err := sim.TopologyByName(topo)
	if err != nil {
		t.Fatal(err)
	}
	return newClientOf(t, tp, opts)
}

// newClientOf builds a client over a fresh simulator of tp (its own calibration, without jitter).
func newClientOf(t testing.TB, tp engine.Topology, opts engine.Options) (*engine.Client, *timeline.Store) {
	t.Helper()
	m := sim.ModelOf(tp)
	m.KernelJitter = 0
	store := timeline.NewStore(nil)
	s, err := sim.New(sim.Config{Topology: tp, Seed: 1, Model: m}, store, store.Strings)
	if err != nil {
		t.Fatal(err)
	}
	return engine.NewClient(s, store, opts), store
}

// warm creates the communicators of the given device sets and runs until they exist, so a test's
// timings do not include the 0.92 s first-communicator cost.
func warm(t testing.TB, c *engine.Client, sets ...[]engine.DeviceID) {
	t.Helper()
	for _, s := range sets {
		if _, err := c.Communicator(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func lastOf(events []timeline.Event, k timeline.Kind) timeline.Event {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Kind == k {
			return events[i]
		}
	}
	return timeline.Event{}
}

func within(got, want, tol float64) bool { return math.Abs(got-want) <= tol*want }

// TestCalibrationCopies checks the copy model against the H100 measurements in FACTS.md.
func TestCalibrationCopies(t *testing.T) {
	const gib = 1 << 30
	tests := []struct {
		name     string
		dir      timeline.CopyDir
		pageable bool
		bytes    int64
		wantGBps float64
		tol      float64
	}{
		{"h2d pinned 1GiB", timeline.CopyH2D, false, gib, 54.8, 0.05},
		{"d2h pinned 1GiB", timeline.CopyD2H, false, gib, 55.1, 0.05},
		{"h2d pageable 1GiB", timeline.CopyH2D, true, gib, 17.7, 0.05},
		{"d2d 1GiB", timeline.CopyD2D, false, gib, 1504, 0.05},
		{"d2d 64MiB", timeline.CopyD2D, false, 64 << 20, 1380, 0.10},
		{"h2d pinned 64MiB", timeline.CopyH2D, false, 64 << 20, 54.6, 0.05},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, store := newClient(t, "h100x1", engine.DefaultOptions())
			f, err := c.Copy(c.ComputeStream(0), tc.dir, tc.bytes, -1, tc.pageable)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if !f.Done() || f.Err() != nil {
				t.Fatalf("future done=%v err=%v", f.Done(), f.Err())
			}
			e := lastOf(store.Events(), timeline.KindMemcpy)
			got := float64(e.Bytes) / float64(e.Dur())
			if !within(got, tc.wantGBps, tc.tol) {
				t.Errorf("%s: %.1f GB/s; want %.1f ±%.0f%%", tc.name, got, tc.wantGBps, tc.tol*100)
			}
		})
	}
}

// TestCalibrationSmallCopy: an 8-byte copy costs 9.8 µs ±20% from the host issuing it to the host
// seeing it complete (launch + latency + completion), as measured on the H100.
func TestCalibrationSmallCopy(t *testing.T) {
	c, _ := newClient(t, "h100x1", engine.DefaultOptions())
	start := c.Backend().Now()
	f, err := c.Copy(c.ComputeStream(0), timeline.CopyD2D, 8, -1, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := float64(f.At()-start) / 1e3
	if !within(got, 9.8, 0.20) {
		t.Errorf("8-byte copy: %.2f µs; want 9.8 µs ±20%%", got)
	}
}

// allReduce runs one all-reduce over every device of topo (after a warm-up that creates the
// communicator) with opts and returns its event and nccl-tests bus bandwidth in GB/s.
func allReduce(t *testing.T, topo string, bytes int64, opts engine.Options) (timeline.Event, float64) {
	t.Helper()
	c, store := newClient(t, topo, opts)
	return allReduceOn(t, c, store, bytes)
}

// allReduceOn runs an all-reduce of bytes over every GPU of c twice and returns the second, with
// its busbw in GB/s.
func allReduceOn(t *testing.T, c *engine.Client, store *timeline.Store, bytes int64) (timeline.Event, float64) {
	t.Helper()
	devs := c.Topology().AllDevices()
	n := len(devs)
	for range 2 {
		if _, err := c.Collective(timeline.CollAllReduce, devs, bytes, "ar"); err != nil {
			t.Fatal(err)
		}
		if err := c.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	e := lastOf(store.Events(), timeline.KindCollective)
	algbw := float64(bytes) / float64(e.Dur())
	return e, algbw * timeline.CollAllReduce.BusFactor(n)
}

func forced(a timeline.NCCLAlgo, p timeline.NCCLProto) engine.Options {
	o := engine.DefaultOptions()
	o.NCCLAlgo, o.NCCLProto = a, p
	return o
}

// TestCalibrationAllReduce: 8×H100 all-reduce of 1 GiB reaches the published busbw figures
// (FACTS.md, nccl-tests #212) within 5%: NVLS, which NCCL's tuner picks on an NVLS-capable
// NVSwitch host, ~480 GB/s; ring, forced as NCCL_ALGO=Ring does, ~370 GB/s. Across two hosts a
// ring (forced, as NVIDIA advises for measuring the network on 2 nodes, nccl-tests #290) is
// bounded by the NICs: 8 NICs per host at NCCL's 90% of 50 GB/s give a busbw of 8 × 45 = 360
// GB/s, less the ring's cross-node latency, and NVLink is not the limit. (NCCL's own choice there,
// NVLS-tree, is compared with published runs in TestCalibrationMultiHostAllReduce.)
func TestCalibrationAllReduce(t *testing.T) {
	tests := []struct {
		name      string
		opts      engine.Options
		want      float64
		algoProto string
	}{
		{"auto", engine.DefaultOptions(), 480, "NVLS_Simple"},
		{"ring", forced(timeline.AlgoRing, 0), 370, "Ring_Simple"},
		{"ring simple", forced(timeline.AlgoRing, timeline.ProtoSimple), 370, "Ring_Simple"},
	}
	for _, tc := range tests {
		e, got := allReduce(t, "h100x8", 1<<30, tc.opts)
		t.Logf("8×H100 %s busbw %.1f GB/s (%s)", tc.name, got, e.AlgoProto())
		if !within(got, tc.want, 0.05) || e.AlgoProto() != tc.algoProto {
			t.Errorf("8×H100 all-reduce 1 GiB %s: %s busbw %.1f GB/s; want %s %.0f ±5%%", tc.name, e.AlgoProto(), got, tc.algoProto, tc.want)
		}
	}
	m := sim.DefaultModel()
	nicBound := 8 * m.NICBps * m.NCCLNICEff / 1e9
	_, got := allReduce(t, "h100x8x2", 1<<30, forced(timeline.AlgoRing, 0))
	t.Logf("2×8 busbw %.1f GB/s (NIC bound %.1f)", got, nicBound)
	if !within(got, nicBound, 0.10) {
		t.Errorf("2×8 all-reduce 1 GiB busbw %.1f GB/s; want the NIC bound %.1f ±10%%", got, nicBound)
	}
	if got > nicBound*1.001 {
		t.Errorf("2×8 all-reduce busbw %.1f GB/s exceeds what the NICs can carry (%.1f)", got, nicBound)
	}
}

// TestCalibrationSmallAllReduce: at sizes up to 64 KiB an all-reduce alone on the machine takes
// within 20% of the time NCCL's cost model predicts for its topology (latency + bytes/bandwidth
// of the (algorithm, protocol) it picks; 8×H100: Ring/LL at 8 B is 6.6 + 14 × 0.6 = 15.0 µs), and
// its event carries the choice and channels.
func TestCalibrationSmallAllReduce(t *testing.T) {
	tests := []struct {
		topo      string
		bytes     int64
		wantUs    float64
		algoProto string
		channels  int
	}{
		{"h100x8", 8, 15.0, "Ring_LL", 1},
		{"h100x8", 64 << 10, 15.0 + 65536/(1000*141*8/14.0), "Ring_LL", 2},
		// Two hosts: tree/LL, 6.8 + 2·(7·0.6 + 1·5.0) = 25.2 µs.
		{"h100x8x2", 8, 25.2, "Tree_LL", 1},
	}
	for _, tc := range tests {
		e, _ := allReduce(t, tc.topo, tc.bytes, engine.DefaultOptions())
		got := float64(e.Dur()) / 1e3
		_, _, ch := e.NCCLChoice()
		if !within(got, tc.wantUs, 0.20) || e.AlgoProto() != tc.algoProto || ch != tc.channels {
			t.Errorf("%s %d B: %.2f µs %s %d channels; want %.2f µs ±20%% %s %d channels", tc.topo, tc.bytes, got, e.AlgoProto(), ch,
				tc.wantUs, tc.algoProto, tc.channels)
		}
	}
}
