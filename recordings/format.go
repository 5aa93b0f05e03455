package recordings

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Version is the format version this package writes and the newest it reads. Version 2 added
// zstd-compressed Events chunks (ChunkEventsZstd); a file written without compression is version 1.
const Version = 2

// Magic starts every recording.
const Magic = "XFERTOP\x00"

const (
	headerSize   = 16
	trailerSize  = 16
	trailerMagic = "XIDX"
	// MaxChunk bounds a chunk's payload: a larger length field is damage, never an allocation.
	MaxChunk = 64 << 20
	// MaxChunkEvents bounds the events of one Events or EventsZstd chunk (8 times the recorder's
	// DefaultBatch): a count over it is damage, so no chunk decodes to more than MaxChunkEvents
	// events of 80 bytes (5 MiB), however well it compresses. Writer.WriteEvents splits at it.
	MaxChunkEvents = 1 << 16
	// maxEncodedEvent is the most bytes one event takes in an Events payload (all fields present,
	// each at its widest: TestMaxEncodedEvent).
	maxEncodedEvent = 103
)

// ChunkType is a chunk's type byte. Numbers are never reused.
type ChunkType uint8

// Chunk types (docs/recording-format.md).
const (
	ChunkMeta       ChunkType = 1
	ChunkStrings    ChunkType = 2
	ChunkEvents     ChunkType = 3
	ChunkDropped    ChunkType = 4
	ChunkOutcome    ChunkType = 5
	ChunkIndex      ChunkType = 6
	ChunkEventsZstd ChunkType = 7
	ChunkInFlight   ChunkType = 8
	ChunkHostNames  ChunkType = 9
)

// String names the chunk type.
func (t ChunkType) String() string {
	switch t {
	case ChunkMeta:
		return "meta"
	case ChunkStrings:
		return "strings"
	case ChunkEvents:
		return "events"
	case ChunkDropped:
		return "dropped"
	case ChunkOutcome:
		return "outcome"
	case ChunkIndex:
		return "index"
	case ChunkEventsZstd:
		return "events-zstd"
	case ChunkInFlight:
		return "in-flight"
	case ChunkHostNames:
		return "host-names"
	}
	return fmt.Sprintf("chunk(%d)", uint8(t))
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func header(version uint16) []byte {
	h := make([]byte, headerSize)
	copy(h, Magic)
	binary.LittleEndian.PutUint16(h[8:], version)
	return h
}

// appendChunk frames payload as a chunk of type t.
func appendChunk(dst []byte, t ChunkType, payload []byte) []byte {
	start := len(dst)
	dst = append(dst, byte(t))
	dst = binary.AppendUvarint(dst, uint64(len(payload)))
	dst = append(dst, payload...)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

func trailer(indexOffset int64) []byte {
	b := make([]byte, 0, trailerSize)
	b = append(b, trailerMagic...)
	b = binary.LittleEndian.AppendUint64(b, uint64(indexOffset))
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// IndexEntry locates one chunk.
type IndexEntry struct {
	Type     ChunkType
	Offset   int64
	Events   int
	MinStart int64
	MaxEnd   int64
}

func appendIndex(dst []byte, idx []IndexEntry) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(idx)))
	for _, e := range idx {
		dst = append(dst, byte(e.Type))
		dst = binary.AppendUvarint(dst, uint64(e.Offset))
		dst = binary.AppendUvarint(dst, uint64(e.Events))
		dst = binary.AppendVarint(dst, e.MinStart)
		dst = binary.AppendVarint(dst, e.MaxEnd)
	}
	return dst
}

func decodeIndex(payload []byte) ([]IndexEntry, error) {
	d := decoder{b: payload}
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b))/5 {
		return nil, fmt.Errorf("%d index entries do not fit in %d bytes", n, len(d.b))
	}
	out := make([]IndexEntry, 0, n)
	for i := uint64(0); i < n && d.err == nil; i++ {
		out = append(out, IndexEntry{Type: ChunkType(d.byte1()), Offset: int64(d.uvarint()), Events: int(d.uvarint()),
			MinStart: d.varint(), MaxEnd: d.varint()})
	}
	if d.err != nil {
		return nil, d.err
	}
	for i, e := range out {
		if e.Events < 0 || e.Events > MaxChunkEvents {
			return nil, fmt.Errorf("index entry %d says %d events, over the %d a chunk may hold", i, e.Events, MaxChunkEvents)
		}
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%d bytes left after the index", len(d.b))
	}
	return out, nil
}
