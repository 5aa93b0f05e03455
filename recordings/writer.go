package recordings

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/zstd"

	"github.com/xfertop/xfertop/timeline"
)

// Writer appends chunks to a recording. It is not safe for concurrent use; Recorder wraps it for a
// live session.
type Writer struct {
	name   string
	f      *os.File // nil when writing to a plain io.Writer
	w      *bufio.Writer
	off    int64
	index  []IndexEntry
	buf    []byte
	zbuf   []byte
	chunk  []byte
	enc    *zstd.Encoder // nil: events are written uncompressed
	closed bool
	stream bool // no index: a stream is never sought, and a long-lived one must not grow
}

// WriterOption changes how a Writer writes.
type WriterOption func(*writerConfig)

type writerConfig struct {
	uncompressed bool
}

// WithoutCompression writes events uncompressed (Events chunks, format version 1), as xfertop did
// before compression: larger files that any version of xfertop reads.
func WithoutCompression() WriterOption { return func(c *writerConfig) { c.uncompressed = true } }

// Create creates (truncating) a recording at path and writes its header. Events are compressed
// unless an option says otherwise.
func Create(path string, opts ...WriterOption) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create recording: %w", err)
	}
	w, err := newWriter(path, f, f, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	syncDir(path) // make the new directory entry durable too
	return w, nil
}

// NewWriter writes a recording to w (no sync on close). name is used in errors.
func NewWriter(name string, w io.Writer, opts ...WriterOption) (*Writer, error) {
	return newWriter(name, nil, w, opts)
}

func newWriter(name string, f *os.File, w io.Writer, opts []WriterOption) (*Writer, error) {
	var c writerConfig
	for _, o := range opts {
		o(&c)
	}
	wr := &Writer{name: name, f: f, w: bufio.NewWriterSize(w, 256<<10)}
	version := uint16(Version)
	if c.uncompressed {
		// Nothing in the file needs a reader newer than version 1, so say so: older xfertops read it.
		version = 1
	} else {
		wr.enc = newEncoder()
	}
	if _, err := wr.w.Write(header(version)); err != nil {
		return nil, fmt.Errorf("write %s: %w", name, err)
	}
	wr.off = headerSize
	return wr, nil
}

func (w *Writer) write(t ChunkType, payload []byte, events int, minStart, maxEnd int64) error {
	if w.closed {
		return fmt.Errorf("write %s: recording closed", w.name)
	}
	if len(payload) > MaxChunk {
		return fmt.Errorf("write %s: %s chunk of %d bytes exceeds the %d-byte limit", w.name, t, len(payload), MaxChunk)
	}
	w.chunk = appendChunk(w.chunk[:0], t, payload)
	if _, err := w.w.Write(w.chunk); err != nil {
		return fmt.Errorf("write %s at offset %d: %w", w.name, w.off, err)
	}
	if !w.stream {
		w.index = append(w.index, IndexEntry{Type: t, Offset: w.off, Events: events, MinStart: minStart, MaxEnd: maxEnd})
	}
	w.off += int64(len(w.chunk))
	return nil
}

// WriteMeta writes a Meta chunk.
func (w *Writer) WriteMeta(m Meta) error {
	w.buf = appendKV(w.buf[:0], MetaPairs(m))
	return w.write(ChunkMeta, w.buf, 0, 0, 0)
}

// WriteOutcome writes an Outcome chunk (key/value pairs such as "ended").
func (w *Writer) WriteOutcome(kv [][2]string) error {
	w.buf = appendKV(w.buf[:0], kv)
	return w.write(ChunkOutcome, w.buf, 0, 0, 0)
}

// WriteStrings writes string table entries first, first+1, ...
func (w *Writer) WriteStrings(first uint32, strs []string) error {
	if len(strs) == 0 {
		return nil
	}
	w.buf = appendStrings(w.buf[:0], first, strs)
	return w.write(ChunkStrings, w.buf, 0, 0, 0)
}

// WriteEvents writes evs in one Events chunk, or in several of MaxChunkEvents when there are more.
func (w *Writer) WriteEvents(evs []timeline.Event) error {
	for len(evs) > MaxChunkEvents {
		if err := w.writeEvents(evs[:MaxChunkEvents]); err != nil {
			return err
		}
		evs = evs[MaxChunkEvents:]
	}
	return w.writeEvents(evs)
}

func (w *Writer) writeEvents(evs []timeline.Event) error {
	if len(evs) == 0 {
		return nil
	}
	minStart, maxEnd := evs[0].Start, evs[0].End
	for i := range evs {
		minStart, maxEnd = min(minStart, evs[i].Start), max(maxEnd, evs[i].End)
	}
	w.buf = appendEvents(w.buf[:0], evs)
	if len(w.buf) > MaxEventsPayload {
		return fmt.Errorf("write %s: %d events take %d bytes, over the %d-byte limit of a chunk: write fewer at a time", w.name, len(evs), len(w.buf), MaxEventsPayload)
	}
	if w.enc != nil {
		w.zbuf = appendZstdEvents(w.zbuf[:0], w.enc, w.buf)
		// A chunk that does not shrink (a handful of events) stays uncompressed: readers take both.
		if len(w.zbuf) < len(w.buf) {
			return w.write(ChunkEventsZstd, w.zbuf, len(evs), minStart, maxEnd)
		}
	}
	return w.write(ChunkEvents, w.buf, len(evs), minStart, maxEnd)
}

// WriteDropped records that n events were dropped before reaching the recording.
func (w *Writer) WriteDropped(n int64) error {
	if n <= 0 {
		return nil
	}
	w.buf = binary.AppendUvarint(w.buf[:0], uint64(n))
	return w.write(ChunkDropped, w.buf, 0, 0, 0)
}

// Flush hands everything written so far to the operating system, so a killed process loses none of it.
func (w *Writer) Flush() error {
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", w.name, err)
	}
	return nil
}

// NewStreamWriter writes a recording as a stream (a socket to a live console): the same header and
// chunks, but no index is kept or written, so its memory does not grow with the stream's length.
// Close only flushes. name is used in errors. Events are compressed unless an option says otherwise.
func NewStreamWriter(name string, w io.Writer, opts ...WriterOption) (*Writer, error) {
	wr, err := newWriter(name, nil, w, opts)
	if err != nil {
		return nil, err
	}
	wr.stream = true
	return wr, nil
}

// Close writes the index and trailer, flushes, and syncs the file. A stream writer only flushes.
func (w *Writer) Close() error {
	if w.closed {
		return nil
	}
	if w.stream {
		w.closed = true
		return w.Flush()
	}
	err := w.finish()
	w.closed = true
	if w.f != nil {
		// Closed even when a write failed (a full disk): what reached the file stays readable.
		if cerr := w.f.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// finish writes the index and trailer, flushes, and syncs.
func (w *Writer) finish() error {
	idxOff := w.off
	w.buf = appendIndex(w.buf[:0], w.index)
	if err := w.write(ChunkIndex, w.buf, 0, 0, 0); err != nil {
		return err
	}
	if _, err := w.w.Write(trailer(idxOff)); err != nil {
		return fmt.Errorf("write %s: %w", w.name, err)
	}
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", w.name, err)
	}
	if w.f != nil {
		if err := w.f.Sync(); err != nil {
			return fmt.Errorf("sync %s: %w", w.name, err)
		}
	}
	return nil
}

// Offset returns the number of bytes written so far.
func (w *Writer) Offset() int64 { return w.off }

// WriteRecording writes rec whole to w in a canonical layout, then closes w: its Meta, one Strings
// chunk, the events in chunks of DefaultBatch, the drop count and the Outcome. The same recording
// always gives the same bytes, whatever the chunking of the file it was read from (a live recorder's
// chunk boundaries depend on timing).
func WriteRecording(w *Writer, rec *Recording) error {
	if err := w.WriteMeta(rec.Meta); err != nil {
		return err
	}
	if rec.Strings != nil && rec.Strings.Len() > 1 {
		if err := w.WriteStrings(1, rec.Strings.All()[1:]); err != nil {
			return err
		}
	}
	for i := 0; i < len(rec.Events); i += DefaultBatch {
		if err := w.WriteEvents(rec.Events[i:min(i+DefaultBatch, len(rec.Events))]); err != nil {
			return err
		}
	}
	if err := w.WriteDropped(rec.Dropped); err != nil {
		return err
	}
	if rec.InFlight != nil {
		if err := w.WriteInFlight(*rec.InFlight); err != nil {
			return err
		}
	}
	if err := w.WriteOutcome(rec.Outcome); err != nil {
		return err
	}
	return w.Close()
}
