package kineto

import "encoding/binary"

// A file's slices are made as a generic Chrome trace's too until its first GPU op, which most
// PyTorch profiler traces hold only after their CPU ops (half the ResNet-50 trace's events come
// before it). Rather than sort them with the rest, and drop them as they go out, they are held
// apart in the sort's compact records, and dropped at the first GPU op; they join the sorter only
// if the file turns out to be a generic trace, or if there are more than heldBytes of them.

// heldBytes bounds the records of the generic slices a file holds apart.
const heldBytes = 1 << 20

// held are the records of the generic slices of the file being read, until its first GPU op.
type held struct {
	recs   []byte // length and body of each record (spill.go)
	body   []byte
	prev   recBase
	direct bool // there were too many to hold: they go to the sorter as they are made
}

// hold holds a generic slice apart, or passes it to the sorter once too many are held.
func (m *importer) hold(it *item) error {
	h := &m.f.held
	if h.direct {
		return m.put(it)
	}
	h.body = appendItem(h.body[:0], it, h.prev)
	h.prev = baseOf(it)
	h.recs = binary.AppendUvarint(h.recs, uint64(len(h.body)))
	h.recs = append(h.recs, h.body...)
	if len(h.recs) > m.opts.held {
		h.direct = true
		return m.release()
	}
	return nil
}

// release passes the slices held to the sorter.
func (m *importer) release() error {
	h := &m.f.held
	b, prev := h.recs, recBase{}
	for len(b) > 0 {
		n, k := binary.Uvarint(b)
		if err := decodeItem(b[k:k+int(n)], &m.scratch, prev); err != nil {
			return err // not reached: the records were made just now
		}
		b, prev = b[k+int(n):], baseOf(&m.scratch)
		if err := m.put(&m.scratch); err != nil {
			return err
		}
	}
	h.recs, h.body = nil, nil
	return nil
}

// dropHeld forgets the slices held: the file is not a generic trace.
func (m *importer) dropHeld() { m.f.held = held{direct: true} }
