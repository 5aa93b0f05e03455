// Package cuda is the engine's backend on real GPUs: contexts, streams with priorities, events,
// device and pinned host memory and asynchronous copies through the CUDA driver API
// (gorgonia.org/cu), compute steps as a spinning PTX kernel loaded through the driver's JIT, and
// NCCL (loaded with dlopen at run time: no NCCL is needed to build) for communicators, groups,
// send/receive and collectives. Completion is detected by polling CUDA events, so callers never
// block; op times are GPU timestamps measured against a session start event, so real and simulated
// timelines look alike.
//
// It is built only with the "cuda" build tag (see README, "On a GPU machine").
package cuda
