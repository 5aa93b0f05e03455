package kineto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/xfertop/xfertop/timeline"
)

// The external merge sort's runs are temporary files of records, one per item, in (start, seq)
// order. A record is its length (uvarint) and its body (appendItem): each field written against
// the run's previous item or left out when zero, so that a kernel takes about 15 bytes where its
// JSON took 150 to 400.

// mergeFanIn bounds the runs merged at once (open files, and their read buffers): more runs are
// first merged fanIn at a time into longer ones.
const mergeFanIn = 64

// Buffer sizes of the files of runs.
const (
	runWriteBuffer = 256 << 10
	runReadBuffer  = 32 << 10
)

// spill holds the temporary files of one import's sort, and removes them all on close.
type spill struct {
	dir   string // where they go ("": the system's temporary directory)
	fanIn int    // runs merged at once
	told  func(path string)
	made  []string // every file made and not yet removed
	ready []string // finished runs, in the order they were written
}

// create starts a new run.
func (s *spill) create() (*runWriter, error) {
	f, err := os.CreateTemp(s.dir, "xfertop-sort-*.run")
	if err != nil {
		return nil, fmt.Errorf("sort the trace's events: %w", err)
	}
	s.made = append(s.made, f.Name())
	if s.told != nil {
		s.told(f.Name())
	}
	return &runWriter{s: s, f: f, buf: make([]byte, 0, runWriteBuffer+binary.MaxVarintLen64+maxRecord)}, nil
}

// remove deletes a file made by create.
func (s *spill) remove(path string) {
	os.Remove(path)
	for i, p := range s.made {
		if p == path {
			s.made = append(s.made[:i], s.made[i+1:]...)
			break
		}
	}
}

// close removes every file made and not yet removed.
func (s *spill) close() {
	for _, p := range s.made {
		os.Remove(p)
	}
	s.made, s.ready = nil, nil
}

// merge merges the finished runs in (start, seq) order into out, fanIn at a time.
func (s *spill) merge(out func(it *item) error) error {
	for len(s.ready) > s.fanIn {
		w, err := s.create()
		if err != nil {
			return err
		}
		group := s.ready[:s.fanIn]
		if err := mergeRuns(group, w.write); err != nil {
			w.f.Close()
			return err
		}
		s.ready = s.ready[s.fanIn:]
		if err := w.close(); err != nil {
			return err
		}
		for _, p := range group {
			s.remove(p)
		}
	}
	return mergeRuns(s.ready, out)
}

// runWriter writes one run.
type runWriter struct {
	s    *spill
	f    *os.File
	buf  []byte // records not yet written to f
	prev recBase
	err  error
}

func (w *runWriter) write(it *item) error {
	if w.err != nil {
		return w.err
	}
	// The body goes after a byte for its length, which nearly always fits one: a longer one
	// moves the body along by the second byte it takes.
	at := len(w.buf)
	w.buf = appendItem(append(w.buf, 0), it, w.prev)
	w.prev = baseOf(it)
	if n := len(w.buf) - at - 1; n < 0x80 {
		w.buf[at] = byte(n)
	} else {
		w.buf = append(w.buf, 0)
		copy(w.buf[at+2:], w.buf[at+1:len(w.buf)-1])
		binary.PutUvarint(w.buf[at:], uint64(n))
	}
	if len(w.buf) >= runWriteBuffer {
		w.flush()
	}
	return w.err
}

// flush writes the records buffered to the file.
func (w *runWriter) flush() {
	if w.err == nil && len(w.buf) > 0 {
		if _, err := w.f.Write(w.buf); err != nil {
			w.err = fmt.Errorf("sort the trace's events: write %s: %w", w.f.Name(), err)
		}
	}
	w.buf = w.buf[:0]
}

// close finishes the run and makes it ready to merge.
func (w *runWriter) close() error {
	w.flush()
	err := w.err
	if cerr := w.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("sort the trace's events: write %s: %w", w.f.Name(), cerr)
	}
	if err != nil {
		return err
	}
	w.s.ready = append(w.s.ready, w.f.Name())
	return nil
}

// The bits of a record's mask, the fields that are not zero, the commonest in its first byte.
// Its two lowest bits say what Queued is: zero, the start plus a varint, or a sentinel.
const (
	mQueuedDelta = 1 + iota
	mQueuedPending
	mQueuedUnknown
	mQueued = 3
)

const (
	mOp = 4 << iota
	mPeer
	mStream
	mLabel
	mAux
	mDevice
	mBytes
	mSub
	mRanks
	mGroup
	mComm
	mBarrier
	mHost
	mStatus
	mPriority
)

// recBase is what a record is written against: the fields of the run's previous item that the
// next one's differ little from (in a run in start order, the start a little later, seq and
// origin often the next ones).
type recBase struct {
	start, seq int64
	org        origin
}

func baseOf(it *item) recBase { return recBase{it.ev.Start, it.seq, it.org} }

// appendItem appends the body of an item's record: the start less the base's (uvarint), the
// duration (varint), seq and origin less the base's (varints), the flags and the kind (a byte
// each), the mask, and the fields it names in the order of its bits (signed ones as varints,
// Queued less the start).
func appendItem(b []byte, it *item, base recBase) []byte {
	e := &it.ev
	b = binary.AppendUvarint(b, uint64(e.Start-base.start))
	b = binary.AppendVarint(b, e.End-e.Start)
	b = binary.AppendVarint(b, it.seq-base.seq)
	b = binary.AppendVarint(b, int64(it.org-base.org))
	b = append(b, it.flags, byte(e.Kind))
	var mask uint64
	switch e.Queued {
	case 0:
	case queuedPending:
		mask = mQueuedPending
	case queuedUnknown:
		mask = mQueuedUnknown
	default:
		mask = mQueuedDelta
	}
	mask |= bit(e.Op != 0, mOp) | bit(e.Peer != 0, mPeer) | bit(e.Stream != 0, mStream) | bit(e.Label != 0, mLabel) |
		bit(e.Aux != 0, mAux) | bit(e.Device != 0, mDevice) | bit(e.Bytes != 0, mBytes) | bit(e.Sub != 0, mSub) |
		bit(e.Ranks != 0, mRanks) | bit(e.Group != 0, mGroup) | bit(e.Comm != 0, mComm) | bit(e.Barrier != 0, mBarrier) |
		bit(e.Host != 0, mHost) | bit(e.Status != 0, mStatus) | bit(e.Priority != 0, mPriority)
	b = binary.AppendUvarint(b, mask)
	if mask&mQueued == mQueuedDelta {
		b = binary.AppendVarint(b, e.Queued-e.Start) // wraps when far from the start, and back on reading
	}
	if mask&mOp != 0 {
		b = binary.AppendUvarint(b, e.Op)
	}
	if mask&mPeer != 0 {
		b = binary.AppendVarint(b, int64(e.Peer))
	}
	if mask&mStream != 0 {
		b = binary.AppendUvarint(b, uint64(e.Stream))
	}
	if mask&mLabel != 0 {
		b = binary.AppendUvarint(b, uint64(e.Label))
	}
	if mask&mAux != 0 {
		b = binary.AppendUvarint(b, uint64(e.Aux))
	}
	if mask&mDevice != 0 {
		b = binary.AppendVarint(b, int64(e.Device))
	}
	if mask&^(mQueued|mOp|mPeer|mStream|mLabel|mAux|mDevice) == 0 {
		return b // the rest are rare
	}
	if mask&mBytes != 0 {
		b = binary.AppendVarint(b, e.Bytes)
	}
	if mask&mSub != 0 {
		b = append(b, e.Sub)
	}
	if mask&mRanks != 0 {
		b = binary.AppendUvarint(b, uint64(e.Ranks))
	}
	for _, f := range [...]struct {
		bit uint64
		v   uint32
	}{{mGroup, e.Group}, {mComm, e.Comm}, {mBarrier, e.Barrier}, {mHost, uint32(e.Host)}, {mStatus, uint32(e.Status)}} {
		if mask&f.bit != 0 {
			b = binary.AppendUvarint(b, uint64(f.v))
		}
	}
	if mask&mPriority != 0 {
		b = append(b, byte(e.Priority))
	}
	return b
}

// bit is v when c holds, else 0.
func bit(c bool, v uint64) uint64 {
	if c {
		return v
	}
	return 0
}

// errRecord is the error of a record that does not decode: the file was changed under the import.
var errRecord = errors.New("damaged record")

// decodeItem decodes a record's body into it.
func decodeItem(b []byte, it *item, base recBase) error {
	d := recDecoder{b: b}
	e := &it.ev
	*e = timeline.Event{}
	e.Start = base.start + int64(d.uvarint())
	e.End = e.Start + d.varint()
	it.seq = base.seq + d.varint()
	it.org = base.org + origin(d.varint())
	it.flags = d.byte()
	e.Kind = timeline.Kind(d.byte())
	mask := d.uvarint()
	switch mask & mQueued {
	case mQueuedDelta:
		e.Queued = e.Start + d.varint()
	case mQueuedPending:
		e.Queued = queuedPending
	case mQueuedUnknown:
		e.Queued = queuedUnknown
	}
	if mask&mOp != 0 {
		e.Op = d.uvarint()
	}
	if mask&mPeer != 0 {
		e.Peer = int32(d.varint())
	}
	if mask&mStream != 0 {
		e.Stream = uint32(d.uvarint())
	}
	if mask&mLabel != 0 {
		e.Label = uint32(d.uvarint())
	}
	if mask&mAux != 0 {
		e.Aux = uint32(d.uvarint())
	}
	if mask&mDevice != 0 {
		e.Device = int32(d.varint())
	}
	if mask&^(mQueued|mOp|mPeer|mStream|mLabel|mAux|mDevice) != 0 {
		d.rare(e, mask)
	}
	if d.bad || d.i != len(d.b) {
		return errRecord
	}
	return nil
}

// rare decodes the fields after the mask's first byte.
func (d *recDecoder) rare(e *timeline.Event, mask uint64) {
	if mask&mBytes != 0 {
		e.Bytes = d.varint()
	}
	if mask&mSub != 0 {
		e.Sub = d.byte()
	}
	if mask&mRanks != 0 {
		e.Ranks = uint16(d.uvarint())
	}
	if mask&mGroup != 0 {
		e.Group = uint32(d.uvarint())
	}
	if mask&mComm != 0 {
		e.Comm = uint32(d.uvarint())
	}
	if mask&mBarrier != 0 {
		e.Barrier = uint32(d.uvarint())
	}
	if mask&mHost != 0 {
		e.Host = uint16(d.uvarint())
	}
	if mask&mStatus != 0 {
		e.Status = uint8(d.uvarint())
	}
	if mask&mPriority != 0 {
		e.Priority = int8(d.byte())
	}
	if mask >= mPriority<<1 {
		d.bad = true
	}
}

// recDecoder reads varints from a record, with a sticky error; a value of up to three bytes (a
// duration in ns, a correlation id) is read without a call.
type recDecoder struct {
	b   []byte
	i   int
	bad bool
}

func (d *recDecoder) uvarint() uint64 {
	if b, i := d.b, d.i; i+2 < len(b) {
		if c := b[i]; c < 0x80 {
			d.i++
			return uint64(c)
		} else if c2 := b[i+1]; c2 < 0x80 {
			d.i += 2
			return uint64(c&0x7f) | uint64(c2)<<7
		} else if c3 := b[i+2]; c3 < 0x80 {
			d.i += 3
			return uint64(c&0x7f) | uint64(c2&0x7f)<<7 | uint64(c3)<<14
		}
	} else if i < len(b) && b[i] < 0x80 {
		d.i++
		return uint64(b[i])
	}
	return d.uvarintLong()
}

func (d *recDecoder) uvarintLong() uint64 {
	if d.i > len(d.b) {
		d.bad = true
		return 0
	}
	v, n := binary.Uvarint(d.b[d.i:])
	if n <= 0 {
		d.bad, d.i = true, len(d.b)
		return 0
	}
	d.i += n
	return v
}

func (d *recDecoder) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (d *recDecoder) byte() byte {
	if d.i >= len(d.b) {
		d.bad = true
		return 0
	}
	d.i++
	return d.b[d.i-1]
}

// runReader reads one run back.
type runReader struct {
	path string
	f    *os.File
	buf  []byte // buf[pos:] is read and not yet decoded
	pos  int
	eof  bool
	off  int64 // the file offset of buf[pos]
	prev recBase
	head item
}

func openRun(path string) (*runReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sort the trace's events: %w", err)
	}
	return &runReader{path: path, f: f, buf: make([]byte, 0, runReadBuffer)}, nil
}

// maxRecord bounds a record's length (an item takes well under 200 bytes).
const maxRecord = 1 << 10

// next reads the next item into head, reporting false at the end of the run.
func (r *runReader) next() (bool, error) {
	if len(r.buf)-r.pos < binary.MaxVarintLen64+maxRecord && !r.eof {
		if err := r.fill(); err != nil {
			return false, fmt.Errorf("sort the trace's events: read %s at byte offset %d: %w", r.path, r.off, err)
		}
	}
	b := r.buf[r.pos:]
	if len(b) == 0 {
		return false, nil
	}
	n, k := binary.Uvarint(b)
	err := errRecord
	if k > 0 && n <= maxRecord {
		err = io.ErrUnexpectedEOF
		if k+int(n) <= len(b) {
			err = decodeItem(b[k:k+int(n)], &r.head, r.prev)
		}
	}
	if err != nil {
		return false, fmt.Errorf("sort the trace's events: read %s at byte offset %d: %w", r.path, r.off, err)
	}
	r.pos += k + int(n)
	r.off += int64(k) + int64(n)
	r.prev = baseOf(&r.head)
	return true, nil
}

// fill moves what is left of the buffer to its front and reads until it is full or the file ends.
func (r *runReader) fill() error {
	n := copy(r.buf[:cap(r.buf)], r.buf[r.pos:])
	r.buf, r.pos = r.buf[:n], 0
	for len(r.buf) < cap(r.buf) {
		m, err := r.f.Read(r.buf[len(r.buf):cap(r.buf)])
		r.buf = r.buf[:len(r.buf)+m]
		if err == io.EOF {
			r.eof = true
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// mergeRuns merges runs in (start, seq) order into out.
func mergeRuns(paths []string, out func(it *item) error) error {
	var h runHeap
	defer func() {
		for _, r := range h {
			r.f.Close()
		}
	}()
	for _, p := range paths {
		r, err := openRun(p)
		if err != nil {
			return err
		}
		more, err := r.next()
		if err != nil {
			r.f.Close()
			return err
		}
		if !more {
			r.f.Close()
			continue
		}
		h.push(r)
	}
	for len(h) > 0 {
		r := h[0]
		if err := out(&r.head); err != nil {
			return err
		}
		more, err := r.next()
		if err != nil {
			return err
		}
		if !more {
			r.f.Close()
		}
		h.fix(more)
	}
	return nil
}

// runHeap is a min-heap of runs by their head item.
type runHeap []*runReader

func runLess(a, b *runReader) bool {
	return a.head.ev.Start < b.head.ev.Start || a.head.ev.Start == b.head.ev.Start && a.head.seq < b.head.seq
}

func (h *runHeap) push(r *runReader) {
	*h = append(*h, r)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !runLess(s[i], s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

// fix restores the heap after the top run's head changed, or drops the top run when it ended.
func (h *runHeap) fix(more bool) {
	s := *h
	if !more {
		n := len(s) - 1
		s[0] = s[n]
		s = s[:n]
		*h = s
	}
	n := len(s)
	for i := 0; ; {
		l, small := 2*i+1, i
		if l < n && runLess(s[l], s[small]) {
			small = l
		}
		if r := l + 1; r < n && runLess(s[r], s[small]) {
			small = r
		}
		if small == i {
			return
		}
		s[i], s[small] = s[small], s[i]
		i = small
	}
}
