package engine

import "fmt"

// FabricKind is how a cluster's hosts are joined beyond their NICs.
type FabricKind uint8

// Fabric kinds. The zero value is FabricNone: every NIC reaches every other at line rate.
const (
	// FabricNone: a non-blocking network, no switch modelled; a flow between hosts crosses only
	// the two NICs.
	FabricNone FabricKind = iota
	// FabricRail: a rail-optimized leaf/spine: NIC i of every host is on rail i's leaf, a leaf
	// serves a rail group of hosts, and leaves are joined through spines.
	FabricRail
)

var fabricNames = [...]string{FabricNone: "none", FabricRail: "rail"}

func (k FabricKind) String() string {
	if int(k) < len(fabricNames) {
		return fabricNames[k]
	}
	return fmt.Sprintf("fabric(%d)", k)
}

// ParseFabricKind reads a fabric kind (none, rail).
func ParseFabricKind(s string) (FabricKind, error) {
	for i, n := range fabricNames {
		if n == s {
			return FabricKind(i), nil
		}
	}
	return 0, fmt.Errorf("%q is not a fabric kind (none, rail)", s)
}

// Fabric is the scale-out network between hosts, and the scale-up NVLink domain when it is larger
// than a host.
type Fabric struct {
	Kind FabricKind
	// SwitchRadix is a leaf switch's ports (down to NICs and up to spines together).
	SwitchRadix int
	// HostsPerLeaf is the hosts of a rail group (one NIC of each on every rail's leaf); 0 takes
	// the leaf's down ports at the oversubscription: SwitchRadix·r/(r+1), SwitchRadix/2 at 1:1.
	HostsPerLeaf int
	// Oversubscription is a leaf's down:up bandwidth ratio (0 is 1: non-blocking).
	Oversubscription float64
	// HopLatencyNs is the latency of one switch hop.
	HopLatencyNs int64
	// NVLinkDomain is the GPUs joined by NVLink across hosts (NVL72: 72); 0 is one host.
	NVLinkDomain int
}

// Oversub returns the oversubscription ratio, 1 where none is given.
func (f Fabric) Oversub() float64 {
	if f.Oversubscription <= 0 {
		return 1
	}
	return f.Oversubscription
}

// LeafHosts returns the hosts of one rail group: HostsPerLeaf, or the leaf's down ports.
func (f Fabric) LeafHosts() int {
	if f.HostsPerLeaf > 0 {
		return f.HostsPerLeaf
	}
	r := f.Oversub()
	return max(int(float64(f.SwitchRadix)*r/(r+1)), 1)
}

// RailGroups returns how many rail groups the topology's hosts fill (1 without a rail fabric).
func (t Topology) RailGroups() int {
	if t.Fabric.Kind != FabricRail {
		return 1
	}
	h := t.Fabric.LeafHosts()
	return (t.Hosts + h - 1) / h
}

// RailGroupOf returns the rail group of a host (0 without a rail fabric).
func (t Topology) RailGroupOf(host int) int {
	if t.Fabric.Kind != FabricRail {
		return 0
	}
	return host / t.Fabric.LeafHosts()
}

// LeafPortBps returns the bandwidth of a leaf's uplink (and of its downlink), each direction: its
// hosts' NIC bandwidth on the rail, divided by the oversubscription.
func (t Topology) LeafPortBps() float64 {
	if t.Fabric.Kind != FabricRail {
		return 0
	}
	return float64(t.Fabric.LeafHosts()) * t.PerGPUBps() / t.Fabric.Oversub()
}

// DomainGPUs returns the GPUs of one NVLink domain: Fabric.NVLinkDomain, or a host's.
func (t Topology) DomainGPUs() int {
	if t.Fabric.NVLinkDomain > t.GPUsPerHost {
		return t.Fabric.NVLinkDomain
	}
	return t.GPUsPerHost
}

// DomainOf returns the NVLink domain of a device: its host, or with a larger NVLink domain the
// domain holding its host.
func (t Topology) DomainOf(d DeviceID) int { return int(d) / t.DomainGPUs() }
