package timeline

import (
	"math"
	"strconv"
	"strings"
)

// IdleMode selects how idle gaps are attributed to causes.
type IdleMode uint8

const (
	// IdleEngine splits each gap by the wait events the engine recorded on the stream.
	IdleEngine IdleMode = iota
	// IdleHTA classifies each whole gap as Holistic Trace Analysis does (but counts no idle time
	// where ops overlap, where HTA counts a negative one); used for imported traces,
	// which carry no wait events.
	IdleHTA
)

// String returns the mode's name in recordings and reports: engine or hta.
func (m IdleMode) String() string {
	if m == IdleHTA {
		return "hta"
	}
	return "engine"
}

// ParseIdleMode is the mode String names ("hta"; anything else is the engine's).
func ParseIdleMode(s string) IdleMode {
	if s == IdleHTA.String() {
		return IdleHTA
	}
	return IdleEngine
}

// Link peaks are indexed in this order (the order of analysis.Link).
const (
	PeakPCIe = iota
	PeakNVLink
	PeakNIC
	PeakHBM
	NumPeaks
)

// Meta describes an event stream: where it came from and what produced it. It is the one
// description of a run that recordings store, reports print and the console shows.
type Meta struct {
	Source   string            // "sim", a recording's path, a trace's path
	Scenario string            // scenario name, when a workload ran
	Knobs    map[string]string // knob values the run used
	Backend  string            // sim, cuda, or the trace format
	Topology string            // the topology's name (for people; nothing parses it)
	Devices  int               // devices in the job
	// GPUsPerHost is how many devices each host has (global id = host × GPUsPerHost + local);
	// 0 when unknown: then which ops stay in a host is unknown too (analysis: their link), and
	// only the console's grouping of rows takes every device as one host's (HostGPUs).
	GPUsPerHost int
	// LinkPeaks is each device's peak bandwidth per link in bytes/s (PCIe, NVLink, NIC, HBM);
	// 0 is unknown.
	LinkPeaks [NumPeaks]float64
	// FabricPortBps is a fabric switch port's bandwidth each way in bytes/s (a leaf's uplink or
	// downlink, the ports LinkFabric events report); 0 is unknown or no fabric.
	FabricPortBps float64
	// LinkBytes says the source measures what its links carry (KindLinkBytes events): link traffic
	// is taken from those alone, not inferred from the ops.
	LinkBytes    bool
	Seed         int64
	IdleMode     IdleMode
	KernelWaitNs int64  // the kernel-wait threshold; 0 is the analysis default
	EpochUnixNs  int64  // wall-clock time of time 0
	Writer       string // the program that wrote a recording
	Mapping      string // how ranks were placed on GPUs (cuda backend)
	// Faults are the faults injected into the run (--fault and the scenario's own), each as
	// --fault reads it; none for a healthy run, and for a recording written before they were kept.
	Faults []string
	Extra  map[string]string
}

// HostGPUs returns GPUsPerHost; when that is unknown, every device is taken as one host's. It is
// for grouping rows on screen only: a number about links must not rest on it (a 1,024-rank job
// without topology had all its traffic put on NVLink), so the analysis reads GPUsPerHost itself.
func (m *Meta) HostGPUs() int {
	switch {
	case m.GPUsPerHost > 0:
		return m.GPUsPerHost
	case m.Devices > 0:
		return m.Devices
	}
	return math.MaxInt32
}

// HostsInEventsKey is the Extra key ("1") saying that each event's Host is its device's host as the
// job's ranks reported it (attach joins ranks by the host names their plugins send): which ops stay
// in a host is then read from the hosts the devices' events carry, not from GPUsPerHost.
const HostsInEventsKey = "hosts_in_events"

// HostsInEvents reports whether m's events carry their devices' hosts (HostsInEventsKey).
func (m *Meta) HostsInEvents() bool { return m.Extra[HostsInEventsKey] == "1" }

// HostNameKey is the Extra key naming host h (the number events carry in Host) as a source of the
// job named it: the host each rank's plugin reported (attach, the plugin's merged recordings), an
// OTLP sender's host.name. The host map (analysis/hostmap) carries the names; views, reports and
// the exporter show them.
func HostNameKey(h int32) string { return "host." + strconv.Itoa(int(h)) + ".name" }

// HostNames returns the host names m carries (HostNameKey), by host number.
func HostNames(m Meta) map[int32]string {
	var out map[int32]string
	for k, v := range m.Extra {
		num, ok := strings.CutPrefix(k, "host.")
		if !ok || v == "" {
			continue
		}
		if num, ok = strings.CutSuffix(num, ".name"); !ok {
			continue
		}
		h, err := strconv.ParseInt(num, 10, 32)
		if err != nil || h < 0 || strconv.Itoa(int(h)) != num {
			continue
		}
		if out == nil {
			out = map[int32]string{}
		}
		out[int32(h)] = v
	}
	return out
}
