// Package engine is xfertop's transfer engine: the API a workload uses to move buffers between
// GPUs and hosts, independent of the backend that executes it.
//
// A Client is built over a Backend (the discrete-event simulator in engine/sim, or real CUDA and
// NCCL in engine/cuda) and offers the mechanisms production ML runtimes use: global device ids,
// streams with priorities, definition events and early enqueue, a bounded communicator cache,
// NCCL-style groups and a batching window, cross-host SendBuffers/ReceiveBuffers with futures and a
// preallocated receive pool, prepared transfers, barriers, collectives including ragged all-to-all,
// a collective memory cache, guards that return typed errors, and a watchdog.
//
// The caller never blocks on a transfer: calls queue commands on each device's host thread and
// return futures at once; Run executes what was queued, and futures resolve as the device completes
// the work. Everything that happens is emitted as timeline events.
//
// A Topology is the cluster a backend runs on: its shape and, read from a topology file by
// engine/topology, its hardware and calibration.
package engine
