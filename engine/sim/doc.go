// Package sim is the engine's simulated backend: a deterministic discrete-event simulation of a GPU
// cluster that runs on any machine.
//
// The model: each device has a host thread that runs the client's commands in order and pays a launch
// cost for each; streams that run their ops in order; a block scheduler that admits kernels by stream
// priority then arrival, so a high-priority NCCL kernel slips in at the next wave boundary of a
// running compute kernel while a normal one waits for it; copy engines that need no SMs; and links
// (HBM, PCIe each way, NVLink each way through a non-blocking NVSwitch or PCIe on a box without
// NVLink, each GPU's share of its host's NICs each way) whose bandwidth is shared max-min fairly by
// the flows crossing them. Collectives expand into flows along NCCL's rings (one ring per NIC across
// hosts), with the algorithm, protocol and latency NCCL's cost model chooses. Every figure comes from
// the topology file (engine/topology; ModelOf); the default, h100x8, is calibrated to FACTS.md.
//
// The simulation runs unpaced, as fast as it can, or paced to the wall clock at a chosen speed.
// Given the same seed and the same commands it emits the same events.
package sim
