package timeline

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

// PackLink packs a link (PeakPCIe, PeakNVLink, PeakNIC, PeakHBM) and a direction (LinkTx, LinkRx)
// into a KindLinkBytes event's Sub.
func PackLink(link, dir int) uint8 { return uint8(link<<1 | dir&1) }

// UnpackLink is PackLink's inverse; ok is false for a link outside the known ones.
func UnpackLink(sub uint8) (link, dir int, ok bool) {
	link, dir = int(sub>>1), int(sub&1)
	return link, dir, link < NumPeaks
}
