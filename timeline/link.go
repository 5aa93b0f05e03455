package timeline

import "fmt"

// LinkWindowNs is the window of a KindLinkBytes event: the engine reports each link's bytes per
// window aligned to multiples of it (a window may be cut short where a run pauses), so that a rate
// computed over these windows is the link's true average over them. The analysis's throughput
// history uses the same buckets.
const LinkWindowNs = 50_000_000

// Link directions, as seen from the device that owns the port.
const (
	LinkTx = 0 // out of the device
	LinkRx = 1 // into the device
)

// linkNames are the device link classes' short names, in PeakPCIe… order.
var linkNames = [NumPeaks]string{"PCIe", "NVLink", "NIC", "HBM"}

// LinkName is a device link class's short name (PCIe, NVLink, NIC, HBM), "link?" for another.
func LinkName(link int) string {
	if link >= 0 && link < NumPeaks {
		return linkNames[link]
	}
	return "link?"
}

// PackLink packs a link (PeakPCIe, PeakNVLink, PeakNIC, PeakHBM) and a direction (LinkTx, LinkRx)
// into a KindLinkBytes event's Sub.
func PackLink(link, dir int) uint8 { return uint8(link<<1 | dir&1) }

// UnpackLink is PackLink's inverse; ok is false for a link outside the known ones.
func UnpackLink(sub uint8) (link, dir int, ok bool) {
	link, dir = int(sub>>1), int(sub&1)
	return link, dir, link < NumPeaks
}

// LinkFabric is the link class of a fabric switch port in a KindLinkBytes event's Sub (PackLink):
// one leaf switch's ports to the spines, LinkTx up (towards the spines), LinkRx down. Such an
// event has Device NoDevice and names the leaf in Aux (PackPort). It is outside the device link
// classes, so UnpackLink reports it as unknown and readers that predate it skip it.
const LinkFabric = NumPeaks

// UnpackFabricLink reports whether a KindLinkBytes event's Sub names a fabric port, and its
// direction (LinkTx up, LinkRx down).
func UnpackFabricLink(sub uint8) (dir int, ok bool) {
	return int(sub & 1), int(sub>>1) == LinkFabric
}

// PackPort names a leaf switch (rail group, rail) in a fabric port event's Aux.
func PackPort(group, rail int) uint32 { return uint32(group)<<8 | uint32(rail&0xff) }

// UnpackPort is PackPort's inverse.
func UnpackPort(aux uint32) (group, rail int) { return int(aux >> 8), int(aux & 0xff) }

// PortName names a leaf switch's spine ports as reports and the console show them: "leaf g3.r5"
// (rail group 3, rail 5).
func PortName(aux uint32) string {
	g, r := UnpackPort(aux)
	return fmt.Sprintf("leaf g%d.r%d", g, r)
}

// MaxRateGBps bounds the rate at which anything moves data, in GB/s (10⁹ B/s, which is bytes per
// ns): no link or memory comes near it (HBM3e peaks at about 8 TB/s, NVLink 5 at 1.8 TB/s per
// GPU). A copy whose bytes and duration give more, even with a tick more of time, is a broken
// record: its rate is unknown, never a figure or a bound above every link.
const MaxRateGBps = 20_000
