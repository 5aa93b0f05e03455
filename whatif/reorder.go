package whatif

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/xfertop/xfertop/timeline"
)

// reorderBuf holds a replay's ops until no later window can start one before them. It holds about
// a step's ops of each replay (more while an early point is kept), so each is held packed: a key
// to sort it by (its start, its index among the measured ops) and the rest of its event varint
// encoded (packOp), about 30 bytes where the event is 80.
type reorderBuf struct {
	ops    []reorderKey // sorted up to sorted
	sorted int
	data   []byte // the ops' packed events, and those of ops passed on (dead bytes)
	dead   int
}

// reorderKey is an op in the buffer: its replayed start, its index among the measured ops (the
// order of ops starting together), and where its packed event begins in data.
type reorderKey struct {
	start int64
	off   int64
	idx   int32
}

func (r *reorderBuf) add(e timeline.Event, idx int32) {
	r.ops = append(r.ops, reorderKey{start: e.Start, off: int64(len(r.data)), idx: idx})
	r.data = packOp(r.data, &e)
}

func byStart(a, b reorderKey) int {
	return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.idx, b.idx))
}

// flush passes on, in start order, the ops that start before lb (and their indices to order).
// An error is an op packOp wrote that does not decode: a fault of the codec, not of the input.
func (r *reorderBuf) flush(lb int64, sink timeline.Sink, order *[]int32) error {
	// What is left from the last flush is sorted: sort the ops added since, and merge them in
	// from the back (no op of one is equal to one of the other: their indices differ), so that
	// no second array of the buffer's size is kept between flushes.
	added := slices.Clone(r.ops[r.sorted:])
	slices.SortFunc(added, byStart)
	i, k := r.sorted-1, len(r.ops)-1
	for j := len(added) - 1; j >= 0; k-- {
		if i >= 0 && byStart(r.ops[i], added[j]) > 0 {
			r.ops[k], i = r.ops[i], i-1
		} else {
			r.ops[k], j = added[j], j-1
		}
	}
	n, _ := slices.BinarySearchFunc(r.ops, lb, func(o reorderKey, t int64) int { return cmp.Compare(o.start, t) })
	var e timeline.Event
	for _, o := range r.ops[:n] {
		end, err := unpackOp(r.data, o.off, o.start, &e)
		if err != nil {
			return fmt.Errorf("reorder buffer: %w", err)
		}
		r.dead += int(end - o.off)
		if sink != nil {
			sink.Emit(&e)
		}
		if order != nil {
			*order = append(*order, o.idx)
		}
	}
	r.ops = r.ops[:copy(r.ops, r.ops[n:])]
	r.sorted = len(r.ops)
	if r.dead > len(r.data)/2 {
		return r.compact()
	}
	return nil
}

// compact drops the packed events of the ops passed on.
func (r *reorderBuf) compact() error {
	data := make([]byte, 0, len(r.data)-r.dead)
	var e timeline.Event
	for i := range r.ops {
		o := &r.ops[i]
		end, err := unpackOp(r.data, o.off, o.start, &e)
		if err != nil {
			return fmt.Errorf("reorder buffer: %w", err)
		}
		start := int64(len(data))
		data = append(data, r.data[o.off:end]...)
		o.off = start
	}
	r.data, r.dead = data, 0
	return nil
}

// packOp appends e, less its start (the key holds it), to b: the times as signed varints from
// the start, the other numbers as varints, the one-byte fields as they are.
func packOp(b []byte, e *timeline.Event) []byte {
	b = binary.AppendVarint(b, e.End-e.Start)
	b = binary.AppendVarint(b, e.Queued-e.Start)
	b = binary.AppendVarint(b, e.Bytes)
	b = binary.AppendUvarint(b, e.Op)
	b = binary.AppendVarint(b, int64(e.Device))
	b = binary.AppendVarint(b, int64(e.Peer))
	for _, u := range [...]uint32{e.Stream, e.Group, e.Comm, e.Barrier, e.Label, e.Aux, uint32(e.Host), uint32(e.Ranks)} {
		b = binary.AppendUvarint(b, uint64(u))
	}
	return append(b, byte(e.Kind), e.Sub, e.Status, byte(e.Priority))
}

// unpackOp decodes into e the op packOp wrote at b[off:] for an op starting at start, and returns
// where it ends.
func unpackOp(b []byte, off, start int64, e *timeline.Event) (int64, error) {
	p := off
	fail := func(what string) (int64, error) {
		return 0, fmt.Errorf("packed op at offset %d: bad %s at offset %d", off, what, p)
	}
	varint := func() (int64, bool) {
		if p >= int64(len(b)) {
			return 0, false
		}
		v, n := binary.Varint(b[p:])
		p += int64(n)
		return v, n > 0
	}
	uvarint := func(limit uint64) (uint64, bool) {
		if p >= int64(len(b)) {
			return 0, false
		}
		v, n := binary.Uvarint(b[p:])
		p += int64(n)
		return v, n > 0 && v <= limit
	}
	*e = timeline.Event{Start: start}
	var ok bool
	var v int64
	if v, ok = varint(); !ok {
		return fail("end")
	}
	e.End = start + v
	if v, ok = varint(); !ok {
		return fail("queued")
	}
	e.Queued = start + v
	if e.Bytes, ok = varint(); !ok {
		return fail("bytes")
	}
	if e.Op, ok = uvarint(^uint64(0)); !ok {
		return fail("op")
	}
	for _, f := range []*int32{&e.Device, &e.Peer} {
		if v, ok = varint(); !ok || v != int64(int32(v)) {
			return fail("device")
		}
		*f = int32(v)
	}
	for _, f := range []*uint32{&e.Stream, &e.Group, &e.Comm, &e.Barrier, &e.Label, &e.Aux} {
		u, ok := uvarint(1<<32 - 1)
		if !ok {
			return fail("id")
		}
		*f = uint32(u)
	}
	for _, f := range []*uint16{&e.Host, &e.Ranks} {
		u, ok := uvarint(1<<16 - 1)
		if !ok {
			return fail("host or ranks")
		}
		*f = uint16(u)
	}
	if p+4 > int64(len(b)) {
		return fail("kind")
	}
	e.Kind, e.Sub, e.Status, e.Priority = timeline.Kind(b[p]), b[p+1], b[p+2], int8(b[p+3])
	return p + 4, nil
}
