// Package cuda is the engine's backend on real GPUs: contexts, streams with priorities, events,
// device and pinned host memory and asynchronous copies through the CUDA driver API
// (gorgonia.org/cu), compute steps as a spinning PTX kernel loaded through the driver's JIT, and
// NCCL (loaded with dlopen at run time: no NCCL is needed to build) for communicators, groups,
// send/receive and collectives. Completion is detected by polling CUDA events, so callers never
// block; op times are GPU timestamps measured against a session start event, so real and simulated
// timelines look alike.
//
// With more ranks than GPUs (--fit, engine.Fit), NCCL's one rank per GPU cannot carry the
// topology's transfers and collectives between ranks sharing a GPU: a send is carried by a copy and
// its receive waits for it on the device, a collective runs over the GPUs its ranks span (over
// one, not at all). Those ops are reported with timeline.AuxEmulated, and the analysis gives them
// no link bytes and no rate of the topology: a --fit run measures that the workload runs, its
// steps and its kernels and copies on this machine, not the topology's links.
//
// It is built only with the "cuda" build tag (see README, "On a GPU machine").
package cuda
