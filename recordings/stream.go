package recordings

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/xfertop/xfertop/timeline"
)

// StreamReader reads a recording from a stream (a connection from a live producer) chunk by chunk,
// without seeking. A stream that ends at a chunk boundary ends cleanly; one that ends inside a
// chunk loses only that chunk (Torn reports how many bytes). Damage in the middle of a stream (a
// checksum that fails) stops it with a *CorruptionError: a stream cannot be resynchronised safely.
type StreamReader struct {
	name    string
	r       *bufio.Reader
	off     int64
	meta    Meta
	hasMeta bool
	outcome [][2]string
	strs    *timeline.Strings
	// inflight is the InFlight chunk, once read
	inflight *InFlight
	dropped  int64
	events   []timeline.Event
	buf      []byte
	err      error
	torn     int64
	ended    bool
	version  uint16
	zstd     eventsInflater // decompresses EventsZstd chunks
}

// NewStreamReader reads the header of the stream r. name is used in errors.
func NewStreamReader(name string, r io.Reader) (*StreamReader, error) {
	s := &StreamReader{name: name, r: bufio.NewReaderSize(r, 64<<10), strs: timeline.NewStrings()}
	h := make([]byte, headerSize)
	if n, err := io.ReadFull(s.r, h); err != nil {
		return nil, fmt.Errorf("%s: %w: the stream ended inside its %d-byte header (%d bytes)", name, ErrNotRecording, headerSize, n)
	}
	if string(h[:8]) != Magic {
		return nil, fmt.Errorf("%s: %w (its first bytes are %q)", name, ErrNotRecording, h[:8])
	}
	if v := binary.LittleEndian.Uint16(h[8:]); v > Version || v == 0 {
		return nil, fmt.Errorf("%s: %w (format version %d; this xfertop reads up to %d)", name, ErrNewerVersion, v, Version)
	}
	s.version = binary.LittleEndian.Uint16(h[8:])
	s.off = headerSize
	return s, nil
}

// Next reads chunks until it has a block of events; false at the end of the stream or on error.
// Meta, strings and drop counts are applied as their chunks arrive.
func (s *StreamReader) Next() bool {
	for !s.ended && s.err == nil {
		typ, payload, err := s.chunk()
		if err != nil {
			s.ended = true
			if !errors.Is(err, io.EOF) {
				s.err = err
			}
			return false
		}
		s.events = s.events[:0]
		if err := s.apply(typ, payload); err != nil {
			s.err = &CorruptionError{File: s.name, Offset: s.off, Err: fmt.Errorf("%s chunk: %w", typ, err)}
			return false
		}
		if (typ == ChunkEvents || typ == ChunkEventsZstd) && len(s.events) > 0 {
			return true
		}
	}
	return false
}

// chunk reads one whole chunk. io.EOF means the stream ended at a chunk boundary or inside a chunk
// (then Torn counts the bytes lost).
func (s *StreamReader) chunk() (ChunkType, []byte, error) {
	typ, err := s.r.ReadByte()
	if err != nil {
		return 0, nil, io.EOF
	}
	length, err := binary.ReadUvarint(s.r)
	n := 1 + uvarintLen(length)
	if err != nil {
		s.torn = 1
		return 0, nil, io.EOF
	}
	if length > MaxChunk {
		return 0, nil, &CorruptionError{File: s.name, Offset: s.off, Err: fmt.Errorf("length %d exceeds the %d-byte limit", length, MaxChunk)}
	}
	total := n + int(length) + 4
	if cap(s.buf) < total {
		s.buf = make([]byte, total)
	}
	b := s.buf[:total]
	b[0] = typ
	binary.PutUvarint(b[1:], length)
	if got, err := io.ReadFull(s.r, b[n:]); err != nil {
		s.torn = int64(n + got)
		return 0, nil, io.EOF
	}
	if crc32.Checksum(b[:total-4], castagnoli) != binary.LittleEndian.Uint32(b[total-4:]) {
		return 0, nil, &CorruptionError{File: s.name, Offset: s.off, Err: ErrChecksum}
	}
	s.off += int64(total)
	return ChunkType(typ), b[n : total-4], nil
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

func (s *StreamReader) apply(typ ChunkType, payload []byte) error {
	switch typ {
	case ChunkMeta:
		kv, err := decodeKV(payload)
		if err != nil {
			return err
		}
		s.meta, s.hasMeta = metaFrom(kv), true
	case ChunkOutcome:
		kv, err := decodeKV(payload)
		if err != nil {
			return err
		}
		s.outcome = kv
	case ChunkStrings:
		first, strs, err := decodeStrings(payload)
		if err != nil {
			return err
		}
		if int(first) != s.strs.Len() {
			return fmt.Errorf("string ids start at %d; expected %d", first, s.strs.Len())
		}
		for _, str := range strs {
			s.strs.Append(str)
		}
	case ChunkEvents, ChunkEventsZstd:
		if typ == ChunkEventsZstd {
			var err error
			if payload, err = s.zstd.payload(s.version, payload); err != nil {
				return err
			}
		}
		evs, err := decodeEvents(s.events[:0], payload)
		if err != nil {
			return err
		}
		s.events = evs
	case ChunkDropped:
		d := decoder{b: payload}
		n := d.uvarint()
		if d.err != nil || len(d.b) != 0 {
			return errors.New("bad drop count")
		}
		s.dropped += int64(n)
	case ChunkInFlight:
		f, err := decodeInFlight(payload)
		if err != nil {
			return err
		}
		s.inflight = &f
	case ChunkHostNames:
		names, err := decodeHostNames(payload)
		if err != nil {
			return err
		}
		s.meta = withHostNames(s.meta, names)
	}
	return nil
}

// InFlight returns what the producer's run had in flight when it stopped early, once its
// InFlight chunk has arrived; nil before, or without one.
func (s *StreamReader) InFlight() *InFlight { return s.inflight }

// At returns the current block of events; the slice is reused by the next call to Next.
func (s *StreamReader) At() []timeline.Event { return s.events }

// Err returns what stopped the stream other than its end (a *CorruptionError), if anything.
func (s *StreamReader) Err() error { return s.err }

// Meta returns the stream's metadata and whether a Meta chunk has arrived.
func (s *StreamReader) Meta() (Meta, bool) { return s.meta, s.hasMeta }

// Outcome returns the Outcome chunk's pairs, if one arrived.
func (s *StreamReader) Outcome() [][2]string { return s.outcome }

// Strings returns the stream's string table so far.
func (s *StreamReader) Strings() *timeline.Strings { return s.strs }

// Dropped returns the events the producer reported dropped, so far.
func (s *StreamReader) Dropped() int64 { return s.dropped }

// Torn returns how many bytes of a last, incomplete chunk were lost when the stream ended inside it.
func (s *StreamReader) Torn() int64 { return s.torn }

// Offset returns how many bytes of complete chunks (and the header) have been read.
func (s *StreamReader) Offset() int64 { return s.off }
