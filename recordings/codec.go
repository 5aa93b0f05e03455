package recordings

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/xfertop/xfertop/timeline"
)

// Field bits of an event's presence mask (docs/recording-format.md).
const (
	bitEnd = 1 << iota
	bitQueued
	bitBytes
	bitOp
	bitDevice
	bitPeer
	bitStream
	bitGroup
	bitComm
	bitBarrier
	bitLabel
	bitAux
	bitHost
	bitRanks
	bitSmall
	bitQueuedUnknown
)

// appendEvents appends the Events payload for evs to dst.
func appendEvents(dst []byte, evs []timeline.Event) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(evs)))
	prev := timeline.Event{Device: -1, Peer: -1}
	for i := range evs {
		e := &evs[i]
		var mask uint64
		if e.End != e.Start {
			mask |= bitEnd
		}
		// Only −1 says unknown: a time before the session's 0 (a source that started before it) is
		// a time, and is kept.
		if e.Queued == -1 {
			mask |= bitQueuedUnknown
		} else if e.Queued != e.Start {
			mask |= bitQueued
		}
		if e.Bytes != 0 {
			mask |= bitBytes
		}
		if e.Op != prev.Op {
			mask |= bitOp
		}
		if e.Device != prev.Device {
			mask |= bitDevice
		}
		if e.Peer != -1 {
			mask |= bitPeer
		}
		if e.Stream != 0 {
			mask |= bitStream
		}
		if e.Group != 0 {
			mask |= bitGroup
		}
		if e.Comm != 0 {
			mask |= bitComm
		}
		if e.Barrier != 0 {
			mask |= bitBarrier
		}
		if e.Label != 0 {
			mask |= bitLabel
		}
		if e.Aux != 0 {
			mask |= bitAux
		}
		if e.Host != 0 {
			mask |= bitHost
		}
		if e.Ranks != 0 {
			mask |= bitRanks
		}
		if e.Sub != 0 || e.Status != 0 || e.Priority != 0 {
			mask |= bitSmall
		}
		dst = append(dst, byte(e.Kind))
		dst = binary.AppendUvarint(dst, mask)
		dst = binary.AppendVarint(dst, e.Start-prev.Start)
		if mask&bitEnd != 0 {
			dst = binary.AppendUvarint(dst, uint64(e.End-e.Start))
		}
		if mask&bitQueued != 0 {
			dst = binary.AppendVarint(dst, e.Start-e.Queued)
		}
		if mask&bitBytes != 0 {
			dst = binary.AppendVarint(dst, e.Bytes)
		}
		if mask&bitOp != 0 {
			dst = binary.AppendVarint(dst, int64(e.Op-prev.Op))
		}
		if mask&bitDevice != 0 {
			dst = binary.AppendVarint(dst, int64(e.Device)-int64(prev.Device))
		}
		if mask&bitPeer != 0 {
			dst = binary.AppendVarint(dst, int64(e.Peer))
		}
		for _, f := range [...]struct {
			bit uint64
			v   uint32
		}{{bitStream, e.Stream}, {bitGroup, e.Group}, {bitComm, e.Comm}, {bitBarrier, e.Barrier}, {bitLabel, e.Label}, {bitAux, e.Aux}} {
			if mask&f.bit != 0 {
				dst = binary.AppendUvarint(dst, uint64(f.v))
			}
		}
		if mask&bitHost != 0 {
			dst = binary.AppendUvarint(dst, uint64(e.Host))
		}
		if mask&bitRanks != 0 {
			dst = binary.AppendUvarint(dst, uint64(e.Ranks))
		}
		if mask&bitSmall != 0 {
			dst = append(dst, e.Sub, e.Status, byte(e.Priority))
		}
		prev = *e
	}
	return dst
}

// errShort is returned when a payload ends inside a field.
var errShort = errors.New("payload ends inside an event")

// decoder reads varints from a payload with a sticky error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	// Fast path for the one-byte case, by far the most common.
	if len(d.b) > 0 && d.b[0] < 0x80 {
		v := uint64(d.b[0])
		d.b = d.b[1:]
		return v
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errShort
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (d *decoder) byte1() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.err = errShort
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

// decodeEvents appends the events of an Events payload to dst. It fills each event in place and
// reads varints with a one-byte fast path: reading must keep up with ~20 M events/s.
func decodeEvents(dst []timeline.Event, payload []byte) ([]timeline.Event, error) {
	d := eventDecoder{b: payload}
	n := d.uv()
	if d.bad {
		return dst, fmt.Errorf("event count: %w", errShort)
	}
	// A chunk holds at most MaxChunkEvents events, each in at least 3 bytes: a count beyond either
	// is damage, not a reason to allocate (a tiny compressed chunk could otherwise make millions).
	if n > MaxChunkEvents {
		return dst, fmt.Errorf("event count %d is over the %d events a chunk may hold", n, MaxChunkEvents)
	}
	if n > uint64(len(d.b)-d.pos)/3 {
		return dst, fmt.Errorf("event count %d does not fit in %d bytes", n, len(d.b)-d.pos)
	}
	base := len(dst)
	dst = growEvents(dst, int(n))[:base+int(n)]
	prev := timeline.Event{Device: -1}
	for i := range int(n) {
		e := &dst[base+i]
		if err := d.event(e, &prev); err != nil {
			return dst[:base+i], fmt.Errorf("event %d of %d: %w", i, n, err)
		}
		prev.Start, prev.Op, prev.Device = e.Start, e.Op, e.Device
	}
	if d.pos != len(d.b) {
		return dst, fmt.Errorf("%d bytes left after %d events", len(d.b)-d.pos, n)
	}
	return dst, nil
}

// eventDecoder reads the varints of an Events payload. A short or overlong varint sets bad and
// moves to the end, so that a damaged payload ends the loop without a check after every field.
type eventDecoder struct {
	b   []byte
	pos int
	bad bool
}

func (d *eventDecoder) uv() uint64 {
	b, pos := d.b, d.pos
	if pos+2 < len(b) {
		// Fast paths for 1-, 2- and 3-byte varints: times, sizes and ids are mostly that short.
		b0 := b[pos]
		if b0 < 0x80 {
			d.pos++
			return uint64(b0)
		}
		b1 := b[pos+1]
		if b1 < 0x80 {
			d.pos += 2
			return uint64(b0&0x7f) | uint64(b1)<<7
		}
		if b2 := b[pos+2]; b2 < 0x80 {
			d.pos += 3
			return uint64(b0&0x7f) | uint64(b1&0x7f)<<7 | uint64(b2)<<14
		}
	}
	v, n := binary.Uvarint(b[pos:])
	if n <= 0 {
		d.bad = true
		d.pos = len(b)
		return 0
	}
	d.pos += n
	return v
}

func (d *eventDecoder) sv() int64 {
	u := d.uv()
	return int64(u>>1) ^ -int64(u&1)
}

// event decodes one event into e; fields it does not carry are the previous event's start, op
// and device (deltas), or their defaults.
func (d *eventDecoder) event(e *timeline.Event, prev *timeline.Event) error {
	if d.pos >= len(d.b) {
		return errShort
	}
	*e = timeline.Event{Kind: timeline.Kind(d.b[d.pos])}
	d.pos++
	mask := d.uv()
	if mask >= 1<<16 {
		return fmt.Errorf("unknown field bits %#x", mask)
	}
	e.Start = prev.Start + d.sv()
	e.End, e.Queued, e.Op, e.Device, e.Peer = e.Start, e.Start, prev.Op, prev.Device, -1
	if mask&bitEnd != 0 {
		e.End = e.Start + int64(d.uv())
	}
	if mask&bitQueued != 0 {
		e.Queued = e.Start - d.sv()
	}
	if mask&bitQueuedUnknown != 0 {
		e.Queued = -1
	}
	if mask&bitBytes != 0 {
		e.Bytes = d.sv()
	}
	if mask&bitOp != 0 {
		e.Op = prev.Op + uint64(d.sv())
	}
	if mask&bitDevice != 0 {
		e.Device = int32(int64(prev.Device) + d.sv())
	}
	if mask&bitPeer != 0 {
		e.Peer = int32(d.sv())
	}
	if mask&(bitStream|bitGroup|bitComm|bitBarrier|bitLabel|bitAux) != 0 {
		var v [6]uint64
		for k, bit := range [6]uint64{bitStream, bitGroup, bitComm, bitBarrier, bitLabel, bitAux} {
			if mask&bit != 0 {
				if v[k] = d.uv(); v[k] > 1<<32-1 {
					return fmt.Errorf("field value %d does not fit 32 bits", v[k])
				}
			}
		}
		e.Stream, e.Group, e.Comm, e.Barrier, e.Label, e.Aux = uint32(v[0]), uint32(v[1]), uint32(v[2]), uint32(v[3]), uint32(v[4]), uint32(v[5])
	}
	if mask&bitHost != 0 {
		e.Host = uint16(d.uv())
	}
	if mask&bitRanks != 0 {
		e.Ranks = uint16(d.uv())
	}
	if mask&bitSmall != 0 {
		if d.pos+3 > len(d.b) {
			return errShort
		}
		e.Sub, e.Status, e.Priority = d.b[d.pos], d.b[d.pos+1], int8(d.b[d.pos+2])
		d.pos += 3
	}
	if d.bad {
		return errShort
	}
	return nil
}

func growEvents(dst []timeline.Event, n int) []timeline.Event {
	if cap(dst)-len(dst) < n {
		// Doubling: reading a file chunk by chunk into one slice copies each event O(1) times.
		grown := make([]timeline.Event, len(dst), max(len(dst)+n, 2*cap(dst)))
		copy(grown, dst)
		dst = grown
	}
	return dst
}

// appendKV appends a key/value payload.
func appendKV(dst []byte, kv [][2]string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(kv)))
	for _, p := range kv {
		dst = appendString(dst, p[0])
		dst = appendString(dst, p[1])
	}
	return dst
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func (d *decoder) str() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.err = fmt.Errorf("string of %d bytes in %d", n, len(d.b))
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func decodeKV(payload []byte) ([][2]string, error) {
	d := decoder{b: payload}
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b))/2 {
		return nil, fmt.Errorf("%d pairs do not fit in %d bytes", n, len(d.b))
	}
	out := make([][2]string, 0, n)
	for i := uint64(0); i < n && d.err == nil; i++ {
		k := d.str()
		v := d.str()
		out = append(out, [2]string{k, v})
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%d bytes left after %d pairs", len(d.b), n)
	}
	return out, nil
}

// appendStrings appends a Strings payload: entries first, first+1, ...
func appendStrings(dst []byte, first uint32, strs []string) []byte {
	dst = binary.AppendUvarint(dst, uint64(first))
	dst = binary.AppendUvarint(dst, uint64(len(strs)))
	for _, s := range strs {
		dst = appendString(dst, s)
	}
	return dst
}

func decodeStrings(payload []byte) (first uint32, strs []string, err error) {
	d := decoder{b: payload}
	f := d.uvarint()
	n := d.uvarint()
	if d.err == nil && (f == 0 || f > 1<<31) {
		return 0, nil, fmt.Errorf("first string id %d", f)
	}
	if d.err == nil && n > uint64(len(d.b)) {
		return 0, nil, fmt.Errorf("%d strings do not fit in %d bytes", n, len(d.b))
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		strs = append(strs, d.str())
	}
	if d.err != nil {
		return 0, nil, d.err
	}
	if len(d.b) != 0 {
		return 0, nil, fmt.Errorf("%d bytes left after %d strings", len(d.b), n)
	}
	return uint32(f), strs, nil
}
