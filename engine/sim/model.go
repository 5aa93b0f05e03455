package sim

import (
	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/topology"
)

// Model holds the simulator's calibration constants. Times are ns, bandwidths bytes per second.
type Model struct {
	HostLaunchNs    int64 // host cost of a kernel or memcpy launch
	NCCLLaunchNs    int64 // host cost of an NCCL call
	GroupLaunchNs   int64 // host cost of a group (ncclGroupStart/End)
	GroupPerOpNs    int64 // added host cost per op in a group
	WaitLaunchNs    int64 // host cost of cudaStreamWaitEvent / cudaEventRecord
	BatchAddNs      int64 // host cost of adding an op to the batching window
	CopyLatencyNs   int64 // device-side setup and completion of one copy
	NotifyNs        int64 // from device completion to the host seeing it (future resolves)
	EventLatencyNs  int64 // from an event being recorded to a waiting stream running on
	HBMBps          float64
	PCIeBps         float64 // pinned host memory, each direction
	PageableBps     float64 // pageable host memory (bounce buffer)
	NVLinkBps       float64 // per GPU, each direction
	NICBps          float64 // per GPU NIC, each direction
	NVLinkLatencyNs int64   // per ring step inside a host (over NVLink, or PCIe without it)
	NICLatencyNs    int64   // per ring step between hosts
	NCCLBaseNs      int64   // fixed cost of an NCCL kernel (point-to-point, all-to-all)
	NCCLNVLinkEff   float64 // fraction of NVLink line rate (PCIe without NVLink) NCCL's protocols reach
	NCCLNICEff      float64 // fraction of NIC line rate NCCL reaches
	P2PCopyEff      float64 // fraction of NVLink a cudaMemcpyPeer reaches
	NVLinkLinks     int     // NVLinks per GPU (informative: NCCL's NVLS graph takes the GPU's whole NVLink)
	NCCLChannels    int     // ring and tree channels NCCL opens
	NVLSChannels    int     // NVLS channels
	NVLS            bool    // NVLink SHARP usable: NVLS inside a host, NVLS-tree across hosts
	NVLSTree        bool    // the tuner may pick NVLS-tree across hosts (false: NCCL_ALGO=^NVLSTree)
	Hopper          bool    // NCCL's Hopper tables (else Ampere)
	// Interconnect joins a host's GPUs: without NVLink (PCIeOnly) GPU-to-GPU traffic crosses both
	// GPUs' PCIe links and NCCL uses its PCIe latencies; NVLinkBps and NVLinkLatencyNs then stand for
	// nothing and the link latency respectively.
	Interconnect    engine.Interconnect
	NetOverheadUs   float64          // µs a network post costs NCCL's proxy thread (1 on Intel hosts)
	CPU             engine.CPUVendor // hosts' CPU vendor: NCCL's LL bandwidth table across hosts
	BarrierStepNs   int64            // per step of a log2(n) barrier
	WaveNs          int64            // thread-block wave: how long a high-priority kernel may wait for SMs
	CommInitFirstNs int64            // first communicator a host thread creates (NCCL + context set-up)
	CommInitNs      int64            // each further communicator
	GraphLaunchNs   int64            // a captured graph's launch, whatever its node count (0: one HostLaunchNs)
	KernelJitter    float64          // relative uniform jitter applied to kernel durations
}

// DefaultModel is the calibration of the built-in h100x8 topology (engine/topology/builtin/h100x8.yaml),
// the H100 measurements in FACTS.md: H2D pinned 54.8 GB/s at 1 GiB, D2D 1504 GB/s at 1 GiB, 9.8 µs
// from issuing an 8-byte copy to seeing it complete, a first communicator in 0.92 s and later ones
// in 20 ms. NVLink and NIC figures are line rates from the datasheets; NCCL's ring reaches ~82% of
// NVLink (~370 GB/s busbw on 8×H100, the published ring figure this model targets). Collectives
// choose their algorithm and protocol with NCCL's own cost model (nccl.go): on one H100 host NVLS
// reaches ~480 GB/s busbw at large sizes, as published; across hosts the tuner weighs tree, ring
// and NVLS-tree as NCCL 2.28 does (docs/nccl-tests.md compares 2 and 4 hosts with published runs).
func DefaultModel() Model {
	t, err := topology.Builtin(topology.Default)
	if err != nil {
		panic("sim: the built-in default topology does not load: " + err.Error()) // a test proves it does
	}
	return ModelOf(t)
}

// ModelOf is the calibration topology t describes; a topology with only a shape (not read from a
// topology file) runs with DefaultModel's.
func ModelOf(t engine.Topology) Model {
	if !t.Described() {
		return DefaultModel()
	}
	c := &t.Costs
	return Model{
		HostLaunchNs:    c.LaunchNs,
		NCCLLaunchNs:    c.NCCLLaunchNs,
		GroupLaunchNs:   c.GroupLaunchNs,
		GroupPerOpNs:    c.GroupPerOpNs,
		WaitLaunchNs:    c.WaitLaunchNs,
		BatchAddNs:      c.BatchAddNs,
		CopyLatencyNs:   c.CopyLatencyNs,
		NotifyNs:        c.NotifyNs,
		EventLatencyNs:  c.EventLatencyNs,
		HBMBps:          t.GPU.HBMBps,
		PCIeBps:         t.PCIe.PinnedBps,
		PageableBps:     t.PCIe.PageableBps,
		NVLinkBps:       t.GPU.NVLinkBps,
		NICBps:          t.PerGPUBps(),
		NVLinkLatencyNs: t.NCCL.LinkLatencyNs,
		NICLatencyNs:    t.NICs.LatencyNs,
		NCCLBaseNs:      t.NCCL.BaseNs,
		NCCLNVLinkEff:   t.NCCL.LinkEff,
		NCCLNICEff:      t.NCCL.NICEff,
		P2PCopyEff:      t.NCCL.P2PCopyEff,
		NVLinkLinks:     t.GPU.NVLinkLinks,
		NCCLChannels:    t.NCCL.Channels,
		NVLSChannels:    t.NCCL.NVLSChannels,
		NVLS:            t.NVLS,
		NVLSTree:        t.NCCL.NVLSTree,
		Hopper:          t.GPU.Arch == engine.ArchHopper,
		Interconnect:    t.Interconnect,
		NetOverheadUs:   t.NCCL.NetOverheadNs / 1e3,
		CPU:             t.CPU,
		BarrierStepNs:   c.BarrierStepNs,
		WaveNs:          t.GPU.WaveNs,
		CommInitFirstNs: c.CommInitFirstNs,
		CommInitNs:      c.CommInitNs,
		GraphLaunchNs:   c.GraphLaunchNs,
		KernelJitter:    t.GPU.KernelJitter,
	}
}

// TopologyByName returns a built-in topology by name, or reads a topology file when name is a path
// (topology.Load).
func TopologyByName(name string) (engine.Topology, error) {
	return topology.Load(name)
}
