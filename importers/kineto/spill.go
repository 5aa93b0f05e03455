package kineto

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/xfertop/xfertop/timeline"
)

// The external merge sort's runs are temporary files of records, one per item, in (start, seq)
// order. A record is its length (uvarint) and its body: the start less the run's previous start
// (uvarint), the duration, seq and origin (varint, uvarint, uvarint), the flags and the kind
// (one byte each), a mask of the fields that are not zero (uvarint), and those fields in the
// order of the mask's bits (signed ones as varints, the launch time less the start). A kernel
// takes about 25 bytes where its JSON took 400 or more.

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
	return &runWriter{s: s, f: f, bw: bufio.NewWriterSize(f, runWriteBuffer)}, nil
}

func (s *spill) runs() int { return len(s.ready) }

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
	s         *spill
	f         *os.File
	bw        *bufio.Writer
	rec       []byte
	prevStart int64
	err       error
}

func (w *runWriter) write(it *item) error {
	if w.err != nil {
		return w.err
	}
	// The body goes after room for its length, which is then written just before it, so that
	// the record is one write of a reused buffer.
	const room = binary.MaxVarintLen64
	w.rec = appendItem(append(w.rec[:0], make([]byte, room)...), it, w.prevStart)
	w.prevStart = it.ev.Start
	n := uint64(len(w.rec) - room)
	at := room - uvarintLen(n)
	binary.PutUvarint(w.rec[at:], n)
	_, err := w.bw.Write(w.rec[at:])
	if err != nil {
		w.err = fmt.Errorf("sort the trace's events: write %s: %w", w.f.Name(), err)
	}
	return w.err
}

// close finishes the run and makes it ready to merge.
func (w *runWriter) close() error {
	err := w.err
	if err == nil {
		err = w.bw.Flush()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sort the trace's events: write %s: %w", w.f.Name(), err)
	}
	w.s.ready = append(w.s.ready, w.f.Name())
	return nil
}

// Bits of a record's mask: the fields that are not zero.
const (
	mQueued = 1 << iota
	mBytes
	mOp
	mDevice
	mPeer
	mStream
	mGroup
	mComm
	mBarrier
	mLabel
	mAux
	mHost
	mRanks
	mSub
	mStatus
	mPriority
)

// appendItem appends the body of an item's record.
func appendItem(b []byte, it *item, prevStart int64) []byte {
	e := &it.ev
	b = binary.AppendUvarint(b, uint64(e.Start-prevStart))
	b = binary.AppendVarint(b, e.End-e.Start)
	b = binary.AppendUvarint(b, uint64(it.seq))
	b = binary.AppendUvarint(b, uint64(it.org))
	b = append(b, it.flags, byte(e.Kind))
	u32 := [...]uint32{e.Stream, e.Group, e.Comm, e.Barrier, e.Label, e.Aux, uint32(e.Host), uint32(e.Ranks), uint32(e.Sub), uint32(e.Status)}
	var mask uint64
	if e.Queued != 0 {
		mask |= mQueued
	}
	if e.Bytes != 0 {
		mask |= mBytes
	}
	if e.Op != 0 {
		mask |= mOp
	}
	if e.Device != 0 {
		mask |= mDevice
	}
	if e.Peer != 0 {
		mask |= mPeer
	}
	for i, v := range u32 { // mStream ... mStatus, in that order
		if v != 0 {
			mask |= mStream << i
		}
	}
	if e.Priority != 0 {
		mask |= mPriority
	}
	b = binary.AppendUvarint(b, mask)
	if mask&mQueued != 0 {
		b = binary.AppendVarint(b, e.Queued-e.Start) // wraps for the sentinels, and back on reading
	}
	if mask&mBytes != 0 {
		b = binary.AppendVarint(b, e.Bytes)
	}
	if mask&mOp != 0 {
		b = binary.AppendUvarint(b, e.Op)
	}
	if mask&mDevice != 0 {
		b = binary.AppendVarint(b, int64(e.Device))
	}
	if mask&mPeer != 0 {
		b = binary.AppendVarint(b, int64(e.Peer))
	}
	for i, v := range u32 {
		if mask&(mStream<<i) != 0 {
			b = binary.AppendUvarint(b, uint64(v))
		}
	}
	if mask&mPriority != 0 {
		b = binary.AppendVarint(b, int64(e.Priority))
	}
	return b
}

// errRecord is the error of a record that does not decode: the file was changed under the import.
var errRecord = errors.New("damaged record")

// decodeItem decodes a record's body into it.
func decodeItem(b []byte, it *item, prevStart int64) error {
	d := recDecoder{b: b}
	*it = item{}
	e := &it.ev
	e.Start = prevStart + int64(d.uvarint())
	e.End = e.Start + d.varint()
	it.seq = int64(d.uvarint())
	it.org = origin(d.uvarint())
	it.flags = d.byte()
	e.Kind = timeline.Kind(d.byte())
	mask := d.uvarint()
	if mask&mQueued != 0 {
		e.Queued = e.Start + d.varint()
	}
	if mask&mBytes != 0 {
		e.Bytes = d.varint()
	}
	if mask&mOp != 0 {
		e.Op = d.uvarint()
	}
	if mask&mDevice != 0 {
		e.Device = int32(d.varint())
	}
	if mask&mPeer != 0 {
		e.Peer = int32(d.varint())
	}
	u32 := func(bit uint64) uint32 {
		if mask&bit != 0 {
			return uint32(d.uvarint())
		}
		return 0
	}
	e.Stream, e.Group, e.Comm, e.Barrier, e.Label, e.Aux = u32(mStream), u32(mGroup), u32(mComm), u32(mBarrier), u32(mLabel), u32(mAux)
	e.Host, e.Ranks, e.Sub, e.Status = uint16(u32(mHost)), uint16(u32(mRanks)), uint8(u32(mSub)), uint8(u32(mStatus))
	if mask&mPriority != 0 {
		e.Priority = int8(d.varint())
	}
	if d.bad || len(d.b) != 0 {
		return errRecord
	}
	return nil
}

// recDecoder reads varints from a record, with a sticky error.
type recDecoder struct {
	b   []byte
	bad bool
}

func (d *recDecoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *recDecoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.bad, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *recDecoder) byte() byte {
	if len(d.b) == 0 {
		d.bad = true
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

// runReader reads one run back.
type runReader struct {
	path      string
	f         *os.File
	br        *bufio.Reader
	rec       []byte
	off       int64
	prevStart int64
	head      item
}

func openRun(path string) (*runReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sort the trace's events: %w", err)
	}
	return &runReader{path: path, f: f, br: bufio.NewReaderSize(f, runReadBuffer)}, nil
}

// maxRecord bounds a record's length (an item takes well under 200 bytes).
const maxRecord = 1 << 10

// next reads the next item into head, reporting false at the end of the run.
func (r *runReader) next() (bool, error) {
	// A record whole in the read buffer is decoded there; one that straddles its end is copied.
	b, _ := r.br.Peek(min(binary.MaxVarintLen64+maxRecord, r.br.Size()))
	if n, k := binary.Uvarint(b); k > 0 && n <= maxRecord && k+int(n) <= len(b) {
		err := decodeItem(b[k:k+int(n)], &r.head, r.prevStart)
		if err == nil {
			r.br.Discard(k + int(n))
			r.off += int64(k) + int64(n)
			r.prevStart = r.head.ev.Start
			return true, nil
		}
		return false, fmt.Errorf("sort the trace's events: read %s at byte offset %d: %w", r.path, r.off, err)
	}
	n, err := binary.ReadUvarint(r.br)
	if err == io.EOF {
		return false, nil
	}
	if err == nil && n > maxRecord {
		err = errRecord
	}
	if err == nil {
		if cap(r.rec) < int(n) {
			r.rec = make([]byte, n)
		}
		r.rec = r.rec[:n]
		_, err = io.ReadFull(r.br, r.rec)
	}
	if err == nil {
		err = decodeItem(r.rec, &r.head, r.prevStart)
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return false, fmt.Errorf("sort the trace's events: read %s at byte offset %d: %w", r.path, r.off, err)
	}
	r.off += int64(uvarintLen(n)) + int64(n)
	r.prevStart = r.head.ev.Start
	return true, nil
}

func uvarintLen(n uint64) int {
	l := 1
	for ; n >= 0x80; n >>= 7 {
		l++
	}
	return l
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
