package recordings

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// MaxEventsPayload bounds an Events payload once decompressed: the count and MaxChunkEvents events
// at their widest (6.4 MiB). An EventsZstd chunk declaring more is damage (or hostile), refused
// before anything is decompressed.
const MaxEventsPayload = binary.MaxVarintLen64 + MaxChunkEvents*maxEncodedEvent

// newEncoder returns the encoder a Writer keeps for all its chunks. Each chunk is one independent
// zstd frame, so a cut file loses at most the chunk being written and the index can start reading
// at any chunk. The fastest level already gives ~1.5 B/event on the built-ins (the delta-coded
// events repeat a lot within a chunk); the default level gives 1.2 for ~30% more CPU. A 1 MiB
// window covers a chunk of DefaultBatch events (~150 KB) many times over and keeps the encoder's
// history small.
// The chunk's CRC-32C covers the frame, so zstd's own checksum is left out. A single-segment frame
// always carries its content size, which lets a reader check it before decompressing anything.
func newEncoder() *zstd.Encoder {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
		zstd.WithEncoderCRC(false), zstd.WithSingleSegment(true), zstd.WithWindowSize(1<<20))
	if err != nil {
		panic(fmt.Sprintf("recordings: zstd encoder options: %v", err)) // constant options: cannot fail
	}
	return enc
}

// appendZstdEvents appends an EventsZstd payload holding the Events payload raw.
func appendZstdEvents(dst []byte, enc *zstd.Encoder, raw []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(raw)))
	return enc.EncodeAll(raw, dst)
}

// newDecoder returns the decoder a Reader keeps for all its chunks. With concurrency 1 and only
// DecodeAll, it starts no goroutines. Output is capped by the caller's buffer (the size the chunk
// declares) and by MaxEventsPayload, whatever a frame claims.
func newDecoder() *zstd.Decoder {
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(MaxEventsPayload),
		zstd.WithDecoderMaxWindow(MaxEventsPayload), zstd.WithDecodeAllCapLimit(true))
	if err != nil {
		panic(fmt.Sprintf("recordings: zstd decoder options: %v", err)) // constant options: cannot fail
	}
	return dec
}

// ErrTooLarge is wrapped by the error for a chunk declaring a decompressed size over MaxEventsPayload.
var ErrTooLarge = errors.New("over the size limit")

// inflate decompresses an EventsZstd payload into buf (reused), returning the Events payload.
func inflate(dec *zstd.Decoder, buf, payload []byte) ([]byte, []byte, error) {
	d := decoder{b: payload}
	n := d.uvarint()
	if d.err != nil {
		return nil, buf, errors.New("decompressed size: bad uvarint")
	}
	if n > MaxEventsPayload {
		return nil, buf, fmt.Errorf("declared decompressed size %d: %w of %d bytes", n, ErrTooLarge, MaxEventsPayload)
	}
	var h zstd.Header
	if err := h.Decode(d.b); err != nil {
		return nil, buf, fmt.Errorf("zstd frame header: %w", err)
	}
	if !h.HasFCS || h.FrameContentSize != n {
		return nil, buf, fmt.Errorf("the zstd frame's content size (%d, known %v) is not the declared %d bytes", h.FrameContentSize, h.HasFCS, n)
	}
	if uint64(cap(buf)) < n {
		buf = make([]byte, 0, max(n, min(2*uint64(cap(buf)), MaxEventsPayload))) // amortised
	}
	out, err := dec.DecodeAll(d.b, buf[:0:n])
	if err != nil {
		return nil, buf, fmt.Errorf("zstd: %w", err)
	}
	if uint64(len(out)) != n {
		return nil, buf, fmt.Errorf("zstd frame decompresses to %d bytes; the chunk declares %d", len(out), n)
	}
	return out, buf, nil
}

// eventsInflater decompresses the EventsZstd chunks of one file or stream: it makes its decoder at
// the first such chunk and keeps it, and its buffer, for the others.
type eventsInflater struct {
	dec *zstd.Decoder
	buf []byte
}

// payload returns the Events payload of an EventsZstd chunk in a file or stream of the given format
// version; it is valid until the next call.
func (z *eventsInflater) payload(version uint16, compressed []byte) ([]byte, error) {
	if version < 2 {
		return nil, fmt.Errorf("compressed events in a format version %d file (they came with version 2)", version)
	}
	if z.dec == nil {
		z.dec = newDecoder()
	}
	out, buf, err := inflate(z.dec, z.buf, compressed)
	z.buf = buf
	return out, err
}

// close releases the decoder.
func (z *eventsInflater) close() {
	if z.dec != nil {
		z.dec.Close()
		z.dec = nil
	}
}
