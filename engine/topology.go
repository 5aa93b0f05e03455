package engine

import "fmt"

// Topology is the cluster a backend runs on: its shape (hosts, each with the same number of GPUs)
// and, when it was read from a topology file (package engine/topology), its hardware and the
// calibration the simulator runs with. A Topology with only a shape is an H100 SXM NVSwitch host
// to the simulator.
type Topology struct {
	Name        string
	Description string
	Hosts       int
	GPUsPerHost int
	GPU         GPU
	// Interconnect joins a host's GPUs.
	Interconnect Interconnect
	// NVLS says NVLink SHARP is usable: a Hopper NVSwitch system whose fabric manager is running
	// (CUDA reports multicast support), so NCCL's NVLS inside a host and NVLS-tree across hosts
	// are open to its tuner, as NCCL_NVLS_ENABLE's default leaves them. False models a system
	// without it.
	NVLS bool
	// CPU is the hosts' CPU vendor: NCCL's tuner picks its LL bandwidth table across nodes by it.
	CPU  CPUVendor
	PCIe PCIe
	NICs NICs
	// Fabric is the network between hosts (none: every NIC reaches every NIC at line rate).
	Fabric Fabric
	NCCL   NCCLTuning
	Costs  HostCosts
}

// GPU is a GPU model's figures. Bandwidths are one-way bytes per second.
type GPU struct {
	Model        string  // for example "H100 SXM"
	Arch         Arch    // which of NCCL's tuning tables apply
	HBMBps       float64 // a device-to-device copy on one GPU (about half the datasheet's read+write figure)
	NVLinkBps    float64 // per GPU, each direction; 0 without NVLink
	NVLinkLinks  int     // NVLinks per GPU (informative: NCCL's NVLS graph takes the GPU's whole NVLink)
	NVLinkGen    int     // NVLink generation (informative)
	WaveNs       int64   // thread-block wave: how long a high-priority kernel may wait for SMs
	KernelJitter float64 // relative uniform jitter applied to kernel durations
}

// Arch is a GPU architecture as NCCL's tuner tells them apart.
type Arch uint8

// Architectures. Ada (L40S) uses NCCL's Ampere tables, as NCCL does for compute capability 8.9.
const (
	ArchHopper Arch = iota
	ArchAmpere
	ArchAda
)

var archNames = [...]string{ArchHopper: "hopper", ArchAmpere: "ampere", ArchAda: "ada"}

func (a Arch) String() string {
	if int(a) < len(archNames) {
		return archNames[a]
	}
	return fmt.Sprintf("arch(%d)", a)
}

// ParseArch reads an architecture name (hopper, ampere, ada).
func ParseArch(s string) (Arch, error) {
	for i, n := range archNames {
		if n == s {
			return Arch(i), nil
		}
	}
	return 0, fmt.Errorf("%q is not an architecture (hopper, ampere, ada)", s)
}

// CPUVendor is a host CPU's vendor as NCCL's tuner tells them apart (ncclTopoCpuType).
type CPUVendor uint8

// CPU vendors. The zero value is Intel, the x86 hosts of the HGX boards the built-ins describe.
const (
	CPUIntel CPUVendor = iota
	CPUAMD
	CPUOther // Arm (Grace) and the rest: NCCL's tuner treats them as it treats Intel
)

var cpuNames = [...]string{CPUIntel: "intel", CPUAMD: "amd", CPUOther: "other"}

func (c CPUVendor) String() string {
	if int(c) < len(cpuNames) {
		return cpuNames[c]
	}
	return fmt.Sprintf("cpu(%d)", c)
}

// ParseCPUVendor reads a CPU vendor name (intel, amd, other).
func ParseCPUVendor(s string) (CPUVendor, error) {
	for i, n := range cpuNames {
		if n == s {
			return CPUVendor(i), nil
		}
	}
	return 0, fmt.Errorf("%q is not a CPU vendor (intel, amd, other)", s)
}

// Interconnect is how a host's GPUs reach each other.
type Interconnect uint8

// Interconnects. The zero value is NVSwitch, the shape-only Topology's H100 host.
const (
	// NVSwitch: every GPU's NVLinks go to switches; any pair talks at full NVLink bandwidth.
	NVSwitch Interconnect = iota
	// NVLinkMesh: NVLinks join GPUs directly; a pair shares a GPU's links with its other peers.
	NVLinkMesh
	// PCIeOnly: no NVLink; GPUs reach each other over PCIe (and the host's root complex).
	PCIeOnly
)

var interconnectNames = [...]string{NVSwitch: "nvswitch", NVLinkMesh: "nvlink-mesh", PCIeOnly: "pcie"}

func (c Interconnect) String() string {
	if int(c) < len(interconnectNames) {
		return interconnectNames[c]
	}
	return fmt.Sprintf("interconnect(%d)", c)
}

// ParseInterconnect reads an interconnect name (nvswitch, nvlink-mesh, pcie).
func ParseInterconnect(s string) (Interconnect, error) {
	for i, n := range interconnectNames {
		if n == s {
			return Interconnect(i), nil
		}
	}
	return 0, fmt.Errorf("%q is not an interconnect (nvswitch, nvlink-mesh, pcie)", s)
}

// PCIe is the link between each GPU and host memory.
type PCIe struct {
	Gen         int     // PCIe generation (informative: the bandwidths below are what counts)
	PinnedBps   float64 // copies to or from pinned host memory, each direction
	PageableBps float64 // copies to or from pageable host memory (through a bounce buffer)
}

// NICs are a host's network interfaces to the other hosts.
type NICs struct {
	PerHost   int
	Type      string  // for example "InfiniBand NDR" (informative)
	Bps       float64 // per NIC, each direction
	LatencyNs int64   // per network hop
}

// Devices returns the number of devices in the job.
func (t Topology) Devices() int { return t.Hosts * t.GPUsPerHost }

// AllDevices returns every device's global id, in order.
func (t Topology) AllDevices() []DeviceID {
	all := make([]DeviceID, t.Devices())
	for i := range all {
		all[i] = DeviceID(i)
	}
	return all
}

// HostOf returns the host index of a device.
func (t Topology) HostOf(d DeviceID) int { return int(d) / t.GPUsPerHost }

// Valid reports whether d names a device of the topology.
func (t Topology) Valid(d DeviceID) bool { return d >= 0 && int(d) < t.Devices() }

// String describes the topology, for example "h100x8x2 (2 hosts × 8 GPUs)".
func (t Topology) String() string {
	return fmt.Sprintf("%s (%d hosts × %d GPUs)", t.Name, t.Hosts, t.GPUsPerHost)
}

// PerGPUBps is the network bandwidth each GPU of a host gets: the host's NICs shared by its GPUs.
func (t Topology) PerGPUBps() float64 {
	if t.GPUsPerHost <= 0 {
		return 0
	}
	return float64(t.NICs.PerHost) * t.NICs.Bps / float64(t.GPUsPerHost)
}

// NCCLTuning is what NCCL reaches on the topology's links, and the channels it opens.
type NCCLTuning struct {
	LinkEff       float64 // fraction of the GPU-to-GPU link (NVLink, or PCIe without it) NCCL reaches
	NICEff        float64 // fraction of NIC line rate NCCL reaches
	P2PCopyEff    float64 // fraction of NVLink a cudaMemcpyPeer reaches
	Channels      int     // ring and tree channels
	NVLSChannels  int
	NVLSTree      bool    // NCCL may pick NVLS-tree across hosts (false: as NCCL_ALGO=^NVLSTree)
	BaseNs        int64   // fixed cost of an NCCL kernel (point-to-point, all-to-all)
	LinkLatencyNs int64   // per step inside a host
	NetOverheadNs float64 // a network post's cost to NCCL's proxy thread (1 µs on Intel hosts)
}

// HostCosts are the host-side and driver costs of the runtime, ns.
type HostCosts struct {
	LaunchNs        int64 // a kernel or memcpy launch
	NCCLLaunchNs    int64 // an NCCL call
	GroupLaunchNs   int64 // a group (ncclGroupStart/End)
	GroupPerOpNs    int64 // added per op in a group
	WaitLaunchNs    int64 // cudaStreamWaitEvent / cudaEventRecord
	BatchAddNs      int64 // adding an op to the batching window
	CopyLatencyNs   int64 // device-side setup and completion of one copy
	NotifyNs        int64 // from device completion to the host seeing it
	EventLatencyNs  int64 // from an event being recorded to a waiting stream running on
	BarrierStepNs   int64 // per step of a log2(n) barrier
	CommInitFirstNs int64 // first communicator a host thread creates
	CommInitNs      int64 // each further communicator
	// GraphLaunchNs is the launch of a captured CUDA graph (cudaGraphLaunch), whatever its node
	// count; 0 (a file without host.graph_launch) costs one kernel launch.
	GraphLaunchNs int64
}

// Described reports whether t carries hardware figures (it was read from a topology file), not only
// a shape.
func (t Topology) Described() bool { return t.GPU.Model != "" }
