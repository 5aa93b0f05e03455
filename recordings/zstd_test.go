package recordings

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/xfertop/xfertop/timeline"
)

// chunkTypes lists the types of a recording's chunks, in order (the index and trailer excluded).
func chunkTypes(t *testing.T, data []byte) []ChunkType {
	t.Helper()
	bounds := chunkBoundaries(t, data)
	var out []ChunkType
	for _, b := range bounds[:len(bounds)-2] {
		out = append(out, ChunkType(data[b]))
	}
	return out
}

// New recordings compress their events by default (format version 2); WithoutCompression writes the
// version 1 layout. Both read back the same events, and the index seeks in both.
func TestCompression(t *testing.T) {
	evs, s := sample(5000)
	for _, tc := range []struct {
		name    string
		opts    []WriterOption
		version uint16
		events  ChunkType
	}{
		{"default", nil, 2, ChunkEventsZstd},
		{"uncompressed", []WriterOption{WithoutCompression()}, 1, ChunkEvents},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := write(t, evs, s, 1000, tc.opts...)
			if v := binary.LittleEndian.Uint16(data[8:]); v != tc.version {
				t.Errorf("header version %d; want %d", v, tc.version)
			}
			want := []ChunkType{ChunkMeta, ChunkStrings, tc.events, tc.events, tc.events, tc.events, tc.events, ChunkDropped, ChunkOutcome}
			if got := chunkTypes(t, data); !reflect.DeepEqual(got, want) {
				t.Errorf("chunk types %v; want %v", got, want)
			}
			rec, err := ReadAll("mem", data, Options{})
			if err != nil || !reflect.DeepEqual(rec.Events, evs) {
				t.Fatalf("read back: %v, %d events; want the %d written", err, len(rec.Events), len(evs))
			}
			r, err := NewReader("mem", bytesReaderAt(data), int64(len(data)), Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if !r.SeekTime(evs[3500].Start) || !r.Next() || r.At()[0] != evs[3000] {
				t.Errorf("seek to event 3500's time: first event is not event 3000 (start of its chunk): %v", r.Err())
			}
		})
	}
	small := write(t, evs, s, 1000)
	large := write(t, evs, s, 1000, WithoutCompression())
	if len(small)*3 > len(large)*2 {
		t.Errorf("compressed %d bytes, uncompressed %d: want at least 1.5× smaller (these synthetic events repeat less than real ones)", len(small), len(large))
	}
}

// A caller handing WriteEvents more events than a chunk holds gets them split into chunks of
// MaxChunkEvents, each compressed larger than the encoder's window, and reads them back.
func TestLargeChunk(t *testing.T) {
	evs, s := sample(200_000)
	data := write(t, evs, s, len(evs))
	if got := chunkTypes(t, data); len(got) < 7 || got[2] != ChunkEventsZstd || got[5] != ChunkEventsZstd || got[6] == ChunkEventsZstd || len(appendEvents(nil, evs[:MaxChunkEvents])) <= 1<<20 {
		t.Fatalf("chunk types %v; want 200 000 events in 4 compressed chunks, each over 1 MiB raw", got)
	}
	if rec, err := ReadAll("mem", data, Options{}); err != nil || !reflect.DeepEqual(rec.Events, evs) {
		t.Errorf("read back: %v", err)
	}
}

// A chunk of a few events that zstd would not shrink is written uncompressed, in either version.
func TestTinyChunkStaysUncompressed(t *testing.T) {
	evs, s := sample(2)
	data := write(t, evs, s, 1)
	if got := chunkTypes(t, data); got[2] != ChunkEvents || got[3] != ChunkEvents {
		t.Errorf("chunk types %v; want one-event chunks uncompressed", got)
	}
	if rec, err := ReadAll("mem", data, Options{}); err != nil || !reflect.DeepEqual(rec.Events, evs) {
		t.Errorf("read back: %v", err)
	}
}

// zstdFrame compresses raw as the writer does.
func zstdFrame(t *testing.T, raw []byte) []byte {
	t.Helper()
	enc := newEncoder()
	defer enc.Close()
	return enc.EncodeAll(raw, nil)
}

// Hand-made EventsZstd chunks, damaged or hostile: each is a CorruptionError at the chunk's offset
// with the exact reason, allocates nothing beyond the limit, and salvage skips it alone.
func TestZstdChunkErrors(t *testing.T) {
	evs, s := sample(100)
	data := write(t, evs, s, 50)
	bounds := chunkBoundaries(t, data)
	at := bounds[2] // after the meta and strings chunks, before the first Events chunk
	raw := appendEvents(nil, evs[:10])
	frame := zstdFrame(t, raw)
	uv := func(n uint64) []byte { return binary.AppendUvarint(nil, n) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	bigger := zstdFrame(t, append(bytes.Clone(raw), raw...))
	// An RLE block claiming 2^40 bytes in its frame header, in 20 bytes.
	var bomb []byte
	bomb = append(bomb, 0x28, 0xb5, 0x2f, 0xfd) // magic
	bomb = append(bomb, 0xe0)                   // single segment, 8-byte content size
	bomb = binary.LittleEndian.AppendUint64(bomb, 1<<40)
	bomb = append(bomb, 0x03, 0x00, 0x00, 0x00) // last RLE block of size 0 …
	// MaxChunkEvents+1 events of 3 bytes each (an instant at the previous one's time); and the
	// 22 M such events that the old 64 MiB limit let a 5 KB chunk declare.
	many := minimalEvents(MaxChunkEvents + 1)
	old64 := minimalEvents((64<<20 - 4) / 3)
	old64 = append(old64, make([]byte, 64<<20-len(old64))...)[:64<<20]
	old64Frame := zstdFrame(t, old64)
	for _, tc := range []struct {
		name    string
		payload []byte
		reason  string
		is      error
	}{
		{"declared size over the limit", cat(uv(1<<40), frame), "events-zstd chunk: declared decompressed size 1099511627776: over the size limit of 6750218 bytes", ErrTooLarge},
		{"frame bomb with a matching declared size", cat(uv(1<<40), bomb), "events-zstd chunk: declared decompressed size 1099511627776: over the size limit of 6750218 bytes", ErrTooLarge},
		{"frame bigger than declared", cat(uv(uint64(len(raw))), bigger), fmt.Sprintf("events-zstd chunk: the zstd frame's content size (%d, known true) is not the declared %d bytes", 2*len(raw), len(raw)), nil},
		{"frame content size over the limit", cat(uv(100), bomb), "events-zstd chunk: the zstd frame's content size (1099511627776, known true) is not the declared 100 bytes", nil},
		{"not a zstd frame", cat(uv(uint64(len(raw))), raw), "events-zstd chunk: zstd frame header: invalid input: magic number mismatch", zstd.ErrMagicMismatch},
		{"truncated frame", cat(uv(uint64(len(raw))), frame[:len(frame)-3]), "events-zstd chunk: zstd: unexpected EOF", nil},
		{"no size", nil, "events-zstd chunk: decompressed size: bad uvarint", nil},
		{"bad events inside", cat(uv(3), zstdFrame(t, []byte{5, 1, 2})), "events-zstd chunk: event count 5 does not fit in 2 bytes", nil},
		{"more events than a chunk holds", cat(uv(uint64(len(many))), zstdFrame(t, many)), "events-zstd chunk: event count 65537 is over the 65536 events a chunk may hold", nil},
		{"the old limit's 22 M events", cat(uv(uint64(len(old64))), old64Frame), "events-zstd chunk: declared decompressed size 67108864: over the size limit of 6750218 bytes", ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chunk := appendChunk(nil, ChunkEventsZstd, tc.payload)
			bad := cat(data[:at], chunk, data[at:])
			_, err := ReadAll("z.xfr", bad, Options{})
			var ce *CorruptionError
			if !errors.As(err, &ce) || ce.Offset != at || ce.Err.Error() != tc.reason || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("err %v; want a CorruptionError at offset %d: %s", err, at, tc.reason)
			}
			rec, err := ReadAll("z.xfr", bad, Options{Salvage: true})
			if err != nil || !reflect.DeepEqual(rec.Events, evs) {
				t.Fatalf("salvage: %v, %d events; want all %d", err, len(rec.Events), len(evs))
			}
		})
	}
	// Compressed chunks came with version 2: in a version 1 file one is damage.
	old := write(t, evs, s, 50, WithoutCompression())
	chunk := appendChunk(nil, ChunkEventsZstd, cat(uv(uint64(len(raw))), frame))
	_, err := ReadAll("v1.xfr", cat(old[:at], chunk, old[at:]), Options{})
	if want := "events-zstd chunk: compressed events in a format version 1 file (they came with version 2)"; err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("zstd chunk in a version 1 file: %v; want …%s", err, want)
	}
}

// testdata/v1-pipeline.xfr is the pipeline sample as the first format wrote it (version 1, no
// compression). It must always open; rewritten uncompressed it gives the same bytes, and
// rewritten compressed the same events in fewer bytes.
func TestReadsVersion1(t *testing.T) {
	path := filepath.Join("testdata", "v1-pipeline.xfr")
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ReadFile(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Events) != 1553 || rec.Meta.Scenario != "pipeline" || rec.Strings.Len() != 10 || len(rec.Warnings) != 0 {
		t.Fatalf("%s: %d events, scenario %q, %d strings, warnings %v", path, len(rec.Events), rec.Meta.Scenario, rec.Strings.Len(), rec.Warnings)
	}
	for _, tc := range []struct {
		name string
		opts []WriterOption
	}{{"uncompressed", []WriterOption{WithoutCompression()}}, {"compressed", nil}} {
		var buf bytes.Buffer
		w, err := NewWriter("re.xfr", &buf, tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteRecording(w, rec); err != nil {
			t.Fatal(err)
		}
		again, err := ReadAll("re.xfr", buf.Bytes(), Options{})
		if err != nil || !reflect.DeepEqual(again.Events, rec.Events) {
			t.Fatalf("%s rewrite: %v", tc.name, err)
		}
		if tc.opts != nil && !bytes.Equal(buf.Bytes(), old) {
			t.Errorf("rewritten without compression: %d bytes differ from the version 1 file (%d)", buf.Len(), len(old))
		}
		if tc.opts == nil && buf.Len()*2 > len(old) {
			t.Errorf("rewritten compressed: %d bytes; want well under the %d of version 1", buf.Len(), len(old))
		}
	}
}

// The writer keeps one encoder and the reader one decoder for all chunks, and both reuse their
// buffers: in steady state, writing or reading a compressed chunk allocates nothing.
func TestNoAllocationPerChunk(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what allocates")
	}
	evs, _ := sample(8192)
	var buf bytes.Buffer
	w, err := NewWriter("mem", &buf)
	if err != nil {
		t.Fatal(err)
	}
	_ = w.WriteEvents(evs) // warm up: buffers grow once
	if n := testing.AllocsPerRun(20, func() {
		buf.Reset()
		w.index = w.index[:0]
		if err := w.WriteEvents(evs); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("WriteEvents of a compressed chunk: %.1f allocations; want 0", n)
	}
	// Reading: the allocations of reading a file do not grow with its number of chunks (buffers
	// grow a few times, the decoder is made once).
	readAllocs := func(chunks int) float64 {
		evs, s := sample(1024 * chunks)
		data := write(t, evs, s, 1024)
		return testing.AllocsPerRun(3, func() {
			r, err := NewReader("mem", bytesReaderAt(data), int64(len(data)), Options{})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for r.Next() {
				n++
			}
			if n != chunks {
				t.Fatalf("read %d chunks of %d: %v", n, chunks, r.Err())
			}
			r.Close()
		})
	}
	few, many := readAllocs(8), readAllocs(128)
	if many-few > 16 {
		t.Errorf("reading 128 compressed chunks allocates %.0f times, 8 chunks %.0f: want no allocation per chunk", many, few)
	}
}

// minimalEvents is an Events payload of n events of 3 bytes each: kind 1, no field, Start as the
// previous event's.
func minimalEvents(n int) []byte {
	b := binary.AppendUvarint(nil, uint64(n))
	for range n {
		b = append(b, 1, 0, 0)
	}
	return b
}

// An event with every field present at its widest takes maxEncodedEvent bytes, the bound
// MaxEventsPayload is made of.
func TestMaxEncodedEvent(t *testing.T) {
	wide := []timeline.Event{
		{Kind: 1},
		{Kind: timeline.KindCollective, Start: math.MinInt64, End: math.MaxInt64, Queued: 0, Bytes: math.MinInt64,
			Op: 1 << 63, Device: math.MaxInt32, Peer: math.MinInt32, Stream: math.MaxUint32, Group: math.MaxUint32,
			Comm: math.MaxUint32, Barrier: math.MaxUint32, Label: math.MaxUint32, Aux: math.MaxUint32, Host: math.MaxUint16,
			Ranks: math.MaxUint16, Sub: 255, Status: 255, Priority: -128},
	}
	one := len(appendEvents(nil, wide[:1]))
	if got := len(appendEvents(nil, wide)) - one; got != maxEncodedEvent {
		t.Errorf("the widest event takes %d bytes; maxEncodedEvent is %d", got, maxEncodedEvent)
	}
}

// An index entry claiming more events than a chunk holds is damage; it cannot size an allocation.
func TestIndexEventsBound(t *testing.T) {
	idx := binary.AppendUvarint(nil, 1)
	idx = append(idx, byte(ChunkEventsZstd))
	idx = binary.AppendUvarint(idx, 16)
	idx = binary.AppendUvarint(idx, 1<<40)
	idx = binary.AppendVarint(idx, 0)
	idx = binary.AppendVarint(idx, 0)
	if _, err := decodeIndex(idx); err == nil || !strings.Contains(err.Error(), "index entry 0 says 1099511627776 events") {
		t.Errorf("decodeIndex: %v; want the entry's count refused", err)
	}
}
