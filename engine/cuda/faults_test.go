//go:build cuda

package cuda_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"gorgonia.org/cu"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/cuda"
	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/timeline"
)

// faultRig is newRig with faults given as --fault specs; it returns New's error.
func faultRig(t *testing.T, specs ...string) (*rig, error) {
	t.Helper()
	if n, err := cu.NumDevices(); err != nil || n < 2 {
		t.Skipf("needs 2 GPUs, the driver reports %d (%v)", n, err)
	}
	var fs []fault.Fault
	for _, s := range specs {
		f, err := fault.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, f)
	}
	topo := engine.Topology{Name: "test", Hosts: 1, GPUsPerHost: 2}
	store := timeline.NewStore(nil)
	be, err := cuda.New(cuda.Config{Topology: topo, Fit: engine.Fit{Ranks: 2, GPUs: 2}, Faults: fs}, store, store.Strings)
	if err != nil {
		return nil, err
	}
	c := engine.NewClient(be, store, engine.DefaultOptions())
	be.SetWatchdog(int64(300 * time.Millisecond)) // after the client, which sets its own
	return &rig{c: c, be: be, store: store}, nil
}

// Faults real GPUs cannot be made to have are refused when the backend is made, each named with
// the reason.
func TestFaultsRefused(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{"kind=gpu_slow,rank=1,factor=0.5", "gpu_slow: the cuda backend cannot inject it: a real GPU cannot be throttled"},
		{"kind=nic_slow,host=0,nic=0,factor=0.5", "nic_slow: the cuda backend cannot inject it"},
		{"kind=hang,rank=1,mode=in", "a real NCCL kernel cannot be made to stall"},
		{"kind=missing_rank,rank=1", "missing_rank: the cuda backend cannot inject it"},
		{"kind=hang,rank=5", "rank 5 is out of range"},
	} {
		_, err := faultRig(t, c.spec)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error saying %q", c.spec, err, c.want)
		}
	}
}

// A rank hung before a collective never launches it: the other rank's part waits on its GPU
// until the watchdog ends the run, and the hung rank reports no part of it (nor of the kernel
// queued after it).
func TestFaultHangNeverLaunches(t *testing.T) {
	needFake(t)
	needNCCL(t)
	r, err := faultRig(t, "kind=hang,rank=1,coll=all_reduce")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.c.Collective(timeline.CollAllGather, []engine.DeviceID{0, 1}, 1<<16, "before"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.c.Collective(timeline.CollAllReduce, []engine.DeviceID{0, 1}, 1<<16, "hangs"); err != nil {
		t.Fatal(err)
	}
	_ = r.c.Kernel(r.c.ComputeStream(1), 1000, "after")
	err = r.c.Run(context.Background())
	var we *engine.WatchdogError
	if !errors.As(err, &we) || we.Rank != 0 || we.Op != "all_reduce" || len(we.Missing) != 1 || we.Missing[0] != 1 {
		t.Fatalf("err = %v; want the watchdog naming rank 0's all_reduce and rank 1 never arriving", err)
	}
	ops := map[[2]int32]int{} // (device, collective) → parts reported
	for _, e := range r.events(timeline.KindCollective) {
		ops[[2]int32{e.Device, int32(e.Sub)}]++
	}
	if ops[[2]int32{1, int32(timeline.CollAllGather)}] != 1 || ops[[2]int32{1, int32(timeline.CollAllReduce)}] != 0 {
		t.Errorf("rank 1's collectives %v; want its all_gather and no all_reduce", ops)
	}
	if k := r.events(timeline.KindKernel); len(k) != 0 {
		t.Errorf("%d kernels ran; want none after the hang", len(k))
	}
}

// A slow host's rank waits its delay before each launch: its fifth kernel is launched at least
// five delays after the run began (a lower bound: the host may be later, never earlier).
func TestFaultHostSlowDelaysLaunches(t *testing.T) {
	const delay = 20 * time.Millisecond
	r, err := faultRig(t, "kind=host_slow,host=0,gpu=1,delay=20ms")
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		_ = r.c.Kernel(r.c.ComputeStream(1), 1000, "k")
		_ = r.c.Kernel(r.c.ComputeStream(0), 1000, "k")
	}
	r.run(t)
	var last1 int64
	n := 0
	for _, e := range r.events(timeline.KindKernel) {
		if e.Device == 1 {
			last1 = max(last1, e.Queued)
			n++
		}
	}
	if n != 5 || last1 < int64(5*delay) {
		t.Errorf("rank 1: %d kernels, the last launched at %v; want 5, the last after %v", n, time.Duration(last1), 5*delay)
	}
}
