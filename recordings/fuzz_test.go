package recordings

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReader feeds arbitrary bytes to the reader: it must never panic, never allocate from a length
// field beyond the input, and either read events or report why not. Seeds cover both layouts:
// compressed (version 2) and uncompressed (version 1) files, whole, cut and damaged.
func FuzzReader(f *testing.F) {
	evs, s := sample(40)
	for _, opts := range [][]WriterOption{nil, {WithoutCompression()}} {
		whole := write(f, evs, s, 10, opts...)
		f.Add(whole)
		f.Add(whole[:len(whole)/2])
		bad := bytes.Clone(whole)
		bad[len(bad)/3] ^= 0xff
		f.Add(bad)
	}
	f.Add(header(Version))
	// Host names learned after the Meta chunk (a HostNames chunk between events), whole and cut.
	named := hostNamesFile(f)
	f.Add(named)
	f.Add(named[:len(named)*2/3])
	// The NCCL profiler plugin's recordings of a real job (torch 2.11, NCCL 2.28.9, an H200).
	real, err := filepath.Glob("../importers/testdata/realjob/*/*/xfr/*.xfr")
	if err != nil || len(real) == 0 {
		f.Fatalf("the real job's recordings: %v (%d found)", err, len(real))
	}
	for _, p := range real {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("XFERTOP\x00\x01\x00\x00\x00\x00\x00\x00\x00\x03\xff\xff\xff\xff\x0f"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, salvage := range []bool{false, true} {
			rec, err := ReadAll("fuzz.xfr", data, Options{Salvage: salvage})
			if err != nil {
				continue
			}
			reencode(t, rec)
		}
	})
}

// FuzzEventsZstd frames arbitrary bytes as a sound EventsZstd chunk (a valid checksum, so the
// fuzzer reaches the decompressor and the event decoder instead of stopping at the CRC): the reader
// must never panic nor allocate beyond MaxEventsPayload, and whatever it reads must re-encode.
func FuzzEventsZstd(f *testing.F) {
	evs, _ := sample(40)
	raw := appendEvents(nil, evs)
	enc := newEncoder()
	f.Add(appendZstdEvents(nil, enc, raw))
	f.Add(appendZstdEvents(nil, enc, raw[:len(raw)/2]))
	f.Add(binary.AppendUvarint(nil, 1<<40))
	f.Add(append(binary.AppendUvarint(nil, 100), 0x28, 0xb5, 0x2f, 0xfd, 0x20, 0x64, 0x05, 0x00, 0x00))
	// A small frame of many 3-byte events: one past what a chunk may hold, and exactly that.
	for _, n := range []int{MaxChunkEvents + 1, MaxChunkEvents} {
		raw := minimalEvents(n)
		f.Add(appendZstdEvents(nil, enc, raw))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		data := appendChunk(header(Version), ChunkEventsZstd, payload)
		rec, err := ReadAll("fuzz.xfr", data, Options{})
		if err != nil {
			var ce *CorruptionError
			if !errors.As(err, &ce) || ce.File != "fuzz.xfr" || ce.Offset != headerSize {
				t.Fatalf("error %v; want a CorruptionError naming fuzz.xfr at offset %d", err, headerSize)
			}
			return
		}
		// What one chunk decodes to is bounded, however small the chunk.
		if len(rec.Events) > MaxChunkEvents || cap(rec.Events) > MaxChunkEvents {
			t.Fatalf("one chunk decoded to %d events (room for %d); a chunk holds at most %d", len(rec.Events), cap(rec.Events), MaxChunkEvents)
		}
		reencode(t, rec)
	})
}

// reencode checks that what was read re-encodes, compressed and not, and reads back identically.
func reencode(t *testing.T, rec *Recording) {
	for _, opts := range [][]WriterOption{nil, {WithoutCompression()}} {
		var buf bytes.Buffer
		w, _ := NewWriter("re", &buf, opts...)
		_ = w.WriteStrings(1, rec.Strings.All()[1:])
		for i := 0; i < len(rec.Events); i += 100 {
			_ = w.WriteEvents(rec.Events[i:min(i+100, len(rec.Events))])
		}
		_ = w.Close()
		again, err := ReadAll("re", buf.Bytes(), Options{})
		if err != nil || len(again.Events) != len(rec.Events) {
			t.Fatalf("re-encoding %d events: %v (%d back)", len(rec.Events), err, len(again.Events))
		}
		for i := range again.Events {
			if again.Events[i] != rec.Events[i] {
				t.Fatalf("event %d changed on re-encoding: %+v vs %+v", i, again.Events[i], rec.Events[i])
			}
		}
	}
}
