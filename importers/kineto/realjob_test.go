package kineto

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// realJob holds the Kineto traces of a real job (torch 2.11, NCCL 2.28.9, an H200;
// importers/testdata/realjob/…/README.md): 3 iterations, one ProfilerStep#N each, per rank.
const realJob = "../testdata/realjob/h200-torch2.11-nccl2.28.9"

// TestRealJobSteps: a real trace writes each ProfilerStep#N twice, as the CPU's user_annotation
// and as its copy on the GPU's timeline (gpu_user_annotation); the steps are the CPU's, once each:
// 3 on one rank, 3 of each rank on two (a step of each rank, merged into the job's by number).
func TestRealJobSteps(t *testing.T) {
	for _, c := range []struct {
		files []string
		ranks int
	}{
		{[]string{"torch/kineto-rank0.json.gz"}, 1},
		{[]string{"torch2/kineto-rank0.json.gz", "torch2/kineto-rank1.json.gz"}, 2},
	} {
		t.Run(c.files[0], func(t *testing.T) {
			var paths []string
			for _, f := range c.files {
				paths = append(paths, filepath.Join(realJob, f))
			}
			im, err := ReadFiles(paths, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var steps []uint32
			for _, e := range im.Events {
				if e.Kind == timeline.KindStep {
					steps = append(steps, e.Aux)
				}
			}
			slices.Sort(steps)
			var want []uint32
			for n := range uint32(3) {
				for range c.ranks {
					want = append(want, n)
				}
			}
			if !slices.Equal(steps, want) {
				t.Errorf("steps %v; want %v (ProfilerStep#0-2, once per rank)", steps, want)
			}
		})
	}
}

// TestKernelOp: an NCCL kernel's op is its name's, but a SendRecv kernel torch says an
// all-to-all launched ("Collective name" on the kernel, as real torch 2.11 traces write it) is
// the all-to-all; torch's other names do not change the kernel's op.
func TestKernelOp(t *testing.T) {
	for _, c := range []struct {
		kernel, torch string
		want          timeline.CollOp
	}{
		{"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "all_to_allv", timeline.CollAllToAll},
		{"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "all_to_all", timeline.CollAllToAll},
		{"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "alltoall_base", timeline.CollAllToAll},
		{"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "send", timeline.CollSendRecv},
		{"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "", timeline.CollSendRecv},
		{"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", "all_to_allv", timeline.CollAllToAll},
		{"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "_allgather_base", timeline.CollAllGather},
		{"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "all_to_allv", timeline.CollAllReduce},
	} {
		a := rawArgs{Coll: uint8(torchCollOp([]byte(c.torch)))}
		if got, ok := kernelOp([]byte(c.kernel), &a); !ok || got != c.want {
			t.Errorf("kernelOp(%q, Collective name %q) = %v, %v; want %v", c.kernel, c.torch, got, ok, c.want)
		}
	}
	for name, want := range map[string]timeline.CollOp{
		"allreduce": timeline.CollAllReduce, "_allgather_base": timeline.CollAllGather, "broadcast": timeline.CollBroadcast,
		"all_to_allv": timeline.CollAllToAll, "_reduce_scatter_base": timeline.CollReduceScatter, "send": timeline.CollSendRecv,
		"allreduce_coalesced": timeline.CollAllReduce, "barrier": 0, "v": 0, "": 0, "gather": 0,
	} {
		if got := torchCollOp([]byte(name)); got != want {
			t.Errorf("torchCollOp(%q) = %v; want %v", name, got, want)
		}
	}
}
