package recordings

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/xfertop/xfertop/timeline"
)

// CorruptionError is damage in the middle of a recording: a chunk whose checksum or contents are
// wrong with more data after it. It names the file and the chunk's byte offset, and wraps what was
// wrong (errors.Is(err, ErrChecksum), for instance). Reading past it is the caller's choice
// (Options.Salvage), and so is how to tell a user about it.
type CorruptionError struct {
	File   string
	Offset int64
	Err    error
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("%s: corrupt recording at byte offset %d: %v", e.File, e.Offset, e.Err)
}

// Unwrap returns what was wrong with the chunk.
func (e *CorruptionError) Unwrap() error { return e.Err }

// ErrChecksum is wrapped by the error for a chunk whose CRC-32C does not match its bytes.
var ErrChecksum = errors.New("checksum mismatch")

// ErrNewerVersion is wrapped by the error for a recording made by a newer xfertop.
var ErrNewerVersion = errors.New("recorded by a newer xfertop")

// ErrNotRecording is wrapped by the error for a file that is not an xfertop recording.
var ErrNotRecording = errors.New("not an xfertop recording")

// HeaderError is the error for a file that ends inside a recording's 16-byte header: empty, or
// holding the beginning of one (a process killed as it created the file, a copy cut short). It is
// ErrNotRecording to errors.Is: no recording can be read from it.
type HeaderError struct {
	Name string // the file
	Size int    // its bytes, all of them a prefix of the header
}

func (e *HeaderError) Error() string {
	if e.Size == 0 {
		return fmt.Sprintf("%s: the file is empty (0 bytes; a recording starts with a %d-byte header, %q and its format version)", e.Name, headerSize, Magic)
	}
	return fmt.Sprintf("%s: truncated recording header (%d bytes of %d; a recording starts with %q and its format version)", e.Name, e.Size, headerSize, Magic)
}

// Is reports whether target is ErrNotRecording.
func (e *HeaderError) Is(target error) bool { return target == ErrNotRecording }

// IsMagicPrefix reports whether head, a file's first bytes, is the beginning of a recording: the
// whole magic, or a non-empty part of it that is all the file holds.
func IsMagicPrefix(head []byte) bool {
	n := min(len(head), len(Magic))
	return n > 0 && string(head[:n]) == Magic[:n]
}

// Options change how a recording is read.
type Options struct {
	// Salvage skips damaged chunks (reporting each as a warning) instead of stopping at the first.
	Salvage bool
}

// Reader reads a recording chunk by chunk. Next advances to the next block of events; At returns it.
// Meta, strings and drop counts are accumulated as their chunks are met.
type Reader struct {
	name     string
	r        io.ReaderAt
	size     int64
	opts     Options
	off      int64
	end      int64 // where chunks stop: the trailer's start, or size
	meta     Meta
	outcome  [][2]string
	inflight *InFlight // the InFlight chunk, once read
	strs     *timeline.Strings
	dropped  int64
	events   []timeline.Event
	warnings []string
	err      error
	buf      []byte
	index    []IndexEntry
	version  uint16
	unclosed bool
	into     *[]timeline.Event  // when set, Events chunks decode onto it
	file     *os.File           // closed by Close; nil when the caller owns the source
	firstBad *damage            // the first damaged chunk met, for Repair
	zstd     eventsInflater     // decompresses EventsZstd chunks
	hdr      [11]byte           // a chunk's type and length field, read before the rest
	growth   *Growth            // a recording still being written (OpenGrowing): Grow reads on
	cur      int64              // where the chunk of the events At returns starts
	namer    timeline.HostNamer // NameHostsTo's: told each name a HostNames chunk holds
}

// damage is a bad chunk: where it starts, where the next sound chunk starts (-1: none), and why.
type damage struct {
	off, next int64
	err       error
}

// Open opens the recording at path. The reader owns the file: Close closes it.
func Open(path string, opts Options) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open recording: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open recording: %w", err)
	}
	r, err := NewReader(path, f, st.Size(), opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.file = f
	return r, nil
}

// Close releases what the reader holds: the file when Open opened it. It is safe to call more than
// once; the reader must not be used after.
func (r *Reader) Close() error {
	r.zstd.close()
	f := r.file
	r.file = nil
	if f == nil {
		return nil
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close recording %s: %w", r.name, err)
	}
	return nil
}

// NewReader reads a recording of size bytes from r. name is used in errors and warnings.
func NewReader(name string, r io.ReaderAt, size int64, opts Options) (*Reader, error) {
	rd := &Reader{name: name, r: r, size: size, opts: opts, off: headerSize, end: size, strs: timeline.NewStrings()}
	h := make([]byte, headerSize)
	if n, err := r.ReadAt(h, 0); n < headerSize {
		switch {
		case err != nil && !errors.Is(err, io.EOF):
			return nil, fmt.Errorf("read recording %s: %w", name, err)
		case n > 0 && !IsMagicPrefix(h[:n]):
			return nil, fmt.Errorf("%s: %w (its first bytes are %q)", name, ErrNotRecording, h[:n])
		}
		return nil, &HeaderError{Name: name, Size: n}
	}
	if string(h[:8]) != Magic {
		return nil, fmt.Errorf("%s: %w (its first bytes are %q)", name, ErrNotRecording, h[:8])
	}
	rd.version = binary.LittleEndian.Uint16(h[8:])
	if rd.version > Version {
		return nil, fmt.Errorf("%s: %w (format version %d; this xfertop reads up to %d): upgrade xfertop", name, ErrNewerVersion, rd.version, Version)
	}
	if rd.version == 0 {
		return nil, fmt.Errorf("%s: %w (format version 0)", name, ErrNotRecording)
	}
	rd.readTrailer()
	// The Meta chunk comes first: read it now, so Meta is valid as soon as the file is open.
	if typ, payload, total, err := rd.chunkAt(rd.off, rd.end); err == nil && typ == ChunkMeta {
		if kv, err := decodeKV(payload); err == nil {
			rd.meta = metaFrom(kv)
			rd.off += total
		}
	}
	return rd, nil
}

// readTrailer loads the index when the file ends with a valid trailer; otherwise chunks are scanned.
func (r *Reader) readTrailer() {
	if r.size < headerSize+trailerSize {
		return
	}
	t := make([]byte, trailerSize)
	if _, err := r.r.ReadAt(t, r.size-trailerSize); err != nil {
		return
	}
	if string(t[:4]) != trailerMagic || crc32.Checksum(t[:12], castagnoli) != binary.LittleEndian.Uint32(t[12:]) {
		return
	}
	off := int64(binary.LittleEndian.Uint64(t[4:]))
	if off < headerSize || off >= r.size-trailerSize {
		return
	}
	typ, payload, _, err := r.chunkAt(off, r.size-trailerSize)
	if err != nil || typ != ChunkIndex {
		return
	}
	idx, err := decodeIndex(payload)
	if err != nil {
		return
	}
	r.index = idx
	r.end = r.size - trailerSize
}

// chunkAt reads the chunk at off, which must end by limit. It returns the chunk's total size.
func (r *Reader) chunkAt(off, limit int64) (ChunkType, []byte, int64, error) {
	hdr := r.hdr[:] // a field, not a local: a slice handed to an interface method escapes
	n, _ := r.r.ReadAt(hdr[:min(int64(len(hdr)), limit-off)], off)
	if n < 2 {
		return 0, nil, 0, io.ErrUnexpectedEOF
	}
	length, ln := binary.Uvarint(hdr[1:n])
	if ln <= 0 {
		if n < len(hdr) {
			return 0, nil, 0, io.ErrUnexpectedEOF
		}
		return 0, nil, 0, errors.New("bad length field")
	}
	if length > MaxChunk {
		return 0, nil, 0, fmt.Errorf("length %d exceeds the %d-byte limit", length, MaxChunk)
	}
	total := int64(1+ln) + int64(length) + 4
	if off+total > limit {
		return 0, nil, 0, io.ErrUnexpectedEOF
	}
	if int64(cap(r.buf)) < total {
		r.buf = make([]byte, max(total, 2*int64(cap(r.buf)))) // amortised: chunks vary a little in size
	}
	b := r.buf[:total]
	if _, err := r.r.ReadAt(b, off); err != nil {
		return 0, nil, 0, io.ErrUnexpectedEOF
	}
	if crc32.Checksum(b[:total-4], castagnoli) != binary.LittleEndian.Uint32(b[total-4:]) {
		return 0, nil, 0, ErrChecksum
	}
	return ChunkType(b[0]), b[1+ln : total-4], total, nil
}

// Next reads chunks until it has a block of events, returning false at the end or on error.
func (r *Reader) Next() bool {
	for r.err == nil && r.off < r.end {
		typ, payload, total, err := r.chunkAt(r.off, r.end)
		if err != nil {
			if !r.damaged(err) {
				return false
			}
			continue
		}
		chunkOff := r.off
		r.off += total
		r.cur = chunkOff
		if err := r.apply(typ, payload); err != nil {
			r.off = chunkOff
			if !r.damaged(fmt.Errorf("%s chunk: %w", typ, err)) {
				return false
			}
			r.off = max(r.off, chunkOff+1)
			continue
		}
		if typ == ChunkEvents || typ == ChunkEventsZstd {
			return true
		}
	}
	if r.err == nil && r.index == nil && !r.unclosed && r.growth == nil {
		r.unclosed = true
		r.warnings = append(r.warnings, fmt.Sprintf("%s: the recording was not closed cleanly (no index): it may end before the session did", r.name))
	}
	return false
}

// damaged handles a bad chunk at r.off: a torn tail ends reading with a warning; damage mid-file is
// a CorruptionError, or with salvage a warning and a resync. It reports whether to read on.
func (r *Reader) damaged(err error) bool {
	at := r.off
	next := r.resync(at + 1)
	if r.firstBad == nil {
		r.firstBad = &damage{off: at, next: next, err: err}
	}
	if next < 0 {
		// Nothing valid follows: the file was cut off (or its end damaged) while being written.
		r.warnings = append(r.warnings, fmt.Sprintf("%s: torn tail at byte offset %d: the last %d bytes hold no complete chunk (%v) and were not read",
			r.name, at, r.end-at, err))
		r.off = r.end
		return false
	}
	if !r.opts.Salvage {
		r.err = &CorruptionError{File: r.name, Offset: at, Err: err}
		return false
	}
	r.warnings = append(r.warnings, fmt.Sprintf("%s: skipped %d damaged bytes at offset %d (%v)", r.name, next-at, at, err))
	r.off = next
	return true
}

// resync returns the first offset ≥ from where a complete chunk with a valid checksum starts, or -1.
func (r *Reader) resync(from int64) int64 {
	for off := from; off < r.end; off++ {
		if _, _, _, err := r.chunkAt(off, r.end); err == nil {
			return off
		}
	}
	return -1
}

func (r *Reader) apply(typ ChunkType, payload []byte) error {
	r.events = r.events[:0]
	switch typ {
	case ChunkMeta:
		kv, err := decodeKV(payload)
		if err != nil {
			return err
		}
		r.meta = metaFrom(kv)
	case ChunkOutcome:
		kv, err := decodeKV(payload)
		if err != nil {
			return err
		}
		r.outcome = kv
	case ChunkStrings:
		first, strs, err := decodeStrings(payload)
		if err != nil {
			return err
		}
		if int(first) != r.strs.Len() {
			return fmt.Errorf("string ids start at %d; expected %d", first, r.strs.Len())
		}
		for _, s := range strs {
			r.strs.Append(s)
		}
	case ChunkEvents, ChunkEventsZstd:
		if typ == ChunkEventsZstd {
			var err error
			if payload, err = r.zstd.payload(r.version, payload); err != nil {
				return err
			}
		}
		if r.into != nil {
			// Reading everything: decode straight into the caller's slice, no copy.
			n := len(*r.into)
			evs, err := decodeEvents(*r.into, payload)
			if err != nil {
				*r.into = evs[:n]
				return err
			}
			*r.into = evs
			return nil
		}
		evs, err := decodeEvents(r.events[:0], payload)
		if err != nil {
			return err
		}
		r.events = evs
	case ChunkDropped:
		d := decoder{b: payload}
		n := d.uvarint()
		if d.err != nil || len(d.b) != 0 {
			return errors.New("bad drop count")
		}
		r.dropped += int64(n)
	case ChunkIndex:
		// Read through as a chunk when scanning; the trailer path uses it for seeking.
	case ChunkInFlight:
		f, err := decodeInFlight(payload)
		if err != nil {
			return err
		}
		r.inflight = &f
	case ChunkHostNames:
		names, err := decodeHostNames(payload)
		if err != nil {
			return err
		}
		r.meta = withHostNames(r.meta, names)
		if r.namer != nil {
			for _, n := range names {
				r.namer.NameHost(n.Host, n.Name)
			}
		}
	}
	return nil
}

// NameHostsTo makes the reader tell n each host name a HostNames chunk holds, as it reads the
// chunk: before the events that follow it (a host's name precedes its first event), so that a
// replay hands names to its consumers as the live run did. Meta carries the names read so far
// either way.
func (r *Reader) NameHostsTo(n timeline.HostNamer) { r.namer = n }

// InFlight returns what the run had in flight when it stopped early, once the reader has read
// its InFlight chunk (written by Close, near the end); nil without one.
func (r *Reader) InFlight() *InFlight { return r.inflight }

// At returns the current block of events. The slice is reused by the next call to Next.
func (r *Reader) At() []timeline.Event { return r.events }

// ChunkOffset returns the byte offset of the chunk whose events At returns: the Offset its
// IndexEntry has.
func (r *Reader) ChunkOffset() int64 { return r.cur }

// EventsAt decodes the Events chunk that e locates and appends its events to dst, without moving the
// reader (a replay looks at chunks ahead of the one it plays for ops already under way). Labels in
// them may name strings that the reader has not reached yet. It shares the reader's buffers, so it
// is for the reader's goroutine; At's events are left alone.
func (r *Reader) EventsAt(e IndexEntry, dst []timeline.Event) ([]timeline.Event, error) {
	if e.Type != ChunkEvents && e.Type != ChunkEventsZstd {
		return dst, fmt.Errorf("%s: chunk at offset %d is %s, not events", r.name, e.Offset, e.Type)
	}
	typ, payload, _, err := r.chunkAt(e.Offset, r.end)
	if err == nil && typ != e.Type {
		err = fmt.Errorf("the index says %s, the chunk is %s", e.Type, typ)
	}
	if err == nil && typ == ChunkEventsZstd {
		payload, err = r.zstd.payload(r.version, payload)
	}
	if err != nil {
		return dst, &CorruptionError{File: r.name, Offset: e.Offset, Err: err}
	}
	n := len(dst)
	out, err := decodeEvents(dst, payload)
	if err != nil {
		return out[:n], &CorruptionError{File: r.name, Offset: e.Offset, Err: err}
	}
	return out, nil
}

// Err returns the error that stopped reading, if any (a *CorruptionError for damage).
func (r *Reader) Err() error { return r.err }

// Meta returns the session's metadata (read when the file was opened), with the host names of the
// HostNames chunks read since.
func (r *Reader) Meta() Meta { return r.meta }

// Outcome returns the Outcome chunk's pairs, if one was read.
func (r *Reader) Outcome() [][2]string { return r.outcome }

// Strings returns the string table read so far.
func (r *Reader) Strings() *timeline.Strings { return r.strs }

// Dropped returns the events the recorder reported dropped, so far.
func (r *Reader) Dropped() int64 { return r.dropped }

// Warnings returns what was lost or skipped (a torn tail, salvaged chunks).
func (r *Reader) Warnings() []string { return r.warnings }

// Indexed reports whether the file had a valid index (it was closed cleanly).
func (r *Reader) Indexed() bool { return r.index != nil }

// Index returns the seek index of a cleanly closed recording (nil otherwise).
func (r *Reader) Index() []IndexEntry { return r.index }

// SeekTime positions the reader so that the next blocks are the first whose events end at or after
// t (ns). It needs the index; without one it returns false and reading goes on from where it is.
// Meta and Strings chunks before that point are read first, so labels resolve.
func (r *Reader) SeekTime(t int64) bool {
	if r.index == nil {
		return false
	}
	target := int64(-1)
	for _, e := range r.index {
		if (e.Type == ChunkEvents || e.Type == ChunkEventsZstd) && e.MaxEnd >= t {
			target = e.Offset
			break
		}
	}
	if target < 0 {
		target = r.end
	}
	for _, e := range r.index {
		if e.Offset >= target {
			break
		}
		switch e.Type {
		case ChunkMeta, ChunkStrings, ChunkDropped, ChunkOutcome, ChunkHostNames:
			typ, payload, _, err := r.chunkAt(e.Offset, r.end)
			if err == nil && e.Offset >= r.off {
				_ = r.apply(typ, payload)
			}
		}
	}
	r.off = max(r.off, target)
	return true
}

// Recording is a whole recording in memory.
type Recording struct {
	Meta     Meta
	Outcome  [][2]string
	Strings  *timeline.Strings
	Events   []timeline.Event
	Dropped  int64
	Warnings []string
	InFlight *InFlight // what the run had in flight when it stopped early; nil when it did not
}

// ReadFile reads every event of the recording at path.
func ReadFile(path string, opts Options) (*Recording, error) {
	r, err := Open(path, opts)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return readAll(r)
}

// maxPrealloc is the most events readAll allocates room for before reading them (80 MiB).
const maxPrealloc = 1 << 20

func readAll(r *Reader) (*Recording, error) {
	var evs []timeline.Event
	if r.index != nil {
		n := 0
		for _, e := range r.index {
			n += e.Events
		}
		// The index is the file's word, not yet checked against its chunks: it sizes the slice
		// only up to maxPrealloc, and doubling takes it further as events really come.
		evs = make([]timeline.Event, 0, min(n, maxPrealloc))
	}
	r.into = &evs
	for r.Next() {
	}
	r.into = nil
	rec := &Recording{Meta: r.meta, Outcome: r.outcome, Strings: r.strs, Events: evs, Dropped: r.dropped, Warnings: r.warnings,
		InFlight: r.inflight}
	return rec, r.Err()
}

// ReadAll reads every event from a recording held in memory.
func ReadAll(name string, data []byte, opts Options) (*Recording, error) {
	r, err := NewReader(name, bytesReaderAt(data), int64(len(data)), opts)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return readAll(r)
}

type bytesReaderAt []byte

func (b bytesReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off >= int64(len(b)) {
		return 0, io.EOF
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
