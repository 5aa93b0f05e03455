package timeline

import (
	"fmt"
	"strings"
)

// NCCLAlgo is the algorithm a collective ran with, as NCCL names them (NCCL_ALGO). The zero value
// means unknown or not chosen (recordings from sources that do not say, or "auto" in a setting).
type NCCLAlgo uint8

// NCCL algorithms. CollNet (in-network reduction through a SHARP switch) is not modelled.
const (
	AlgoRing     NCCLAlgo = iota + 1 // ring: nRanks-1 (or 2(nRanks-1)) steps around a ring per channel
	AlgoTree                         // double binary tree (a chain inside a host)
	AlgoNVLS                         // NVLink SHARP: the NVSwitch reduces and multicasts
	AlgoNVLSTree                     // NVLS inside each host, a tree between hosts
	numAlgos
)

// NCCLProto is the protocol a collective ran with (NCCL_PROTO). The zero value means unknown.
type NCCLProto uint8

// NCCL protocols.
const (
	ProtoLL     NCCLProto = iota + 1 // 8-byte stores with a flag: lowest latency, half the bandwidth
	ProtoLL128                       // 128-byte lines with a flag: near Simple bandwidth, low latency
	ProtoSimple                      // bulk copies with fences: highest bandwidth, highest latency
	numProtos
)

var (
	algoNames  = [numAlgos]string{"", "Ring", "Tree", "NVLS", "NVLSTree"}
	protoNames = [numProtos]string{"", "LL", "LL128", "Simple"}
)

// String returns NCCL's name of the algorithm ("Ring", "Tree", "NVLS", "NVLSTree"), "" when unknown.
func (a NCCLAlgo) String() string {
	if a < numAlgos {
		return algoNames[a]
	}
	return fmt.Sprintf("algo(%d)", uint8(a))
}

// String returns NCCL's name of the protocol ("LL", "LL128", "Simple"), "" when unknown.
func (p NCCLProto) String() string {
	if p < numProtos {
		return protoNames[p]
	}
	return fmt.Sprintf("proto(%d)", uint8(p))
}

// ParseNCCLAlgo reads an algorithm name as NCCL_ALGO spells it (case-insensitive); "auto" or ""
// gives 0 (let the tuner choose).
func ParseNCCLAlgo(s string) (NCCLAlgo, bool) {
	if s == "" || strings.EqualFold(s, "auto") {
		return 0, true
	}
	for i := AlgoRing; i < numAlgos; i++ {
		if strings.EqualFold(s, algoNames[i]) || strings.EqualFold(s, strings.ReplaceAll(algoNames[i], "Tree", "_tree")) {
			return i, true
		}
	}
	return 0, false
}

// ParseNCCLProto reads a protocol name as NCCL_PROTO spells it (case-insensitive); "auto" or ""
// gives 0.
func ParseNCCLProto(s string) (NCCLProto, bool) {
	if s == "" || strings.EqualFold(s, "auto") {
		return 0, true
	}
	for i := ProtoLL; i < numProtos; i++ {
		if strings.EqualFold(s, protoNames[i]) {
			return i, true
		}
	}
	return 0, false
}

// A collective event's Aux packs the algorithm, protocol and channel count it ran with:
//
//	bits 0-3   NCCLAlgo (0: unknown)
//	bits 4-7   NCCLProto (0: unknown)
//	bits 8-15  channels (0: unknown; at most 255)
//	bits 16-31 zero (reserved)
//
// An Aux of 0 is a collective whose choice is not known (older recordings, imported traces).
const (
	auxProtoShift  = 4
	auxChanShift   = 8
	auxNibbleMask  = 0xf
	auxChannelMask = 0xff
)

// PackNCCL packs an algorithm, protocol and channel count into a collective event's Aux.
func PackNCCL(a NCCLAlgo, p NCCLProto, channels int) uint32 {
	ch := min(max(channels, 0), auxChannelMask)
	return uint32(a)&auxNibbleMask | (uint32(p)&auxNibbleMask)<<auxProtoShift | uint32(ch)<<auxChanShift
}

// NCCLChoice unpacks a collective event's algorithm, protocol and channels from its Aux. Other
// kinds, and collectives whose choice is not known, give zeros.
func (e *Event) NCCLChoice() (NCCLAlgo, NCCLProto, int) {
	if e.Kind != KindCollective {
		return 0, 0, 0
	}
	return NCCLAlgo(e.Aux & auxNibbleMask), NCCLProto(e.Aux >> auxProtoShift & auxNibbleMask), int(e.Aux >> auxChanShift & auxChannelMask)
}

// AlgoProto is the label NCCL Inspector gives a collective's choice: "Ring_LL128", "NVLS_Simple";
// "" when the event is not a collective or its choice is not known.
func (e *Event) AlgoProto() string {
	a, p, _ := e.NCCLChoice()
	if a == 0 && p == 0 {
		return ""
	}
	return a.String() + "_" + p.String()
}
