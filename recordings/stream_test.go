package recordings

import (
	"bytes"
	"errors"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// writeStream builds a stream as a live producer sends it: header, meta, then strings and events
// chunk by chunk, a drop count, and no index. It returns the bytes and each chunk's end offset with
// the events complete by then.
func writeStream(t testing.TB, evs []timeline.Event, s *timeline.Strings, per int) ([]byte, []int64, []int) {
	var buf bytes.Buffer
	w, err := NewStreamWriter("mem", &buf)
	if err != nil {
		t.Fatal(err)
	}
	var ends []int64
	var counts []int
	mark := func(n int) {
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		ends, counts = append(ends, int64(buf.Len())), append(counts, n)
	}
	if err := w.WriteMeta(Meta{Source: "nccl", Backend: "nccl", Devices: 2, EpochUnixNs: 1_700_000_000_000_000_000}); err != nil {
		t.Fatal(err)
	}
	mark(0)
	if err := w.WriteStrings(1, s.All()[1:]); err != nil {
		t.Fatal(err)
	}
	mark(0)
	n := 0
	for i := 0; i < len(evs); i += per {
		if err := w.WriteEvents(evs[i:min(i+per, len(evs))]); err != nil {
			t.Fatal(err)
		}
		n += min(per, len(evs)-i)
		mark(n)
	}
	if err := w.WriteDropped(7); err != nil {
		t.Fatal(err)
	}
	mark(n)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if len(w.index) != 0 {
		t.Fatalf("a stream writer kept %d index entries", len(w.index))
	}
	return buf.Bytes(), ends, counts
}

func readStream(data []byte) (*StreamReader, []timeline.Event, error) {
	s, err := NewStreamReader("mem", bytes.NewReader(data))
	if err != nil {
		return nil, nil, err
	}
	var got []timeline.Event
	for s.Next() {
		got = append(got, s.At()...)
	}
	return s, got, s.Err()
}

func TestStreamRoundTrip(t *testing.T) {
	evs, strs := sample(100)
	data, _, _ := writeStream(t, evs, strs, 30)
	s, got, err := readStream(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(evs) {
		t.Fatalf("read %d events, wrote %d", len(got), len(evs))
	}
	for i := range got {
		if got[i] != evs[i] {
			t.Fatalf("event %d: %+v, wrote %+v", i, got[i], evs[i])
		}
	}
	m, ok := s.Meta()
	if !ok || m.Backend != "nccl" || m.Devices != 2 {
		t.Fatalf("meta %+v (%v)", m, ok)
	}
	if s.Dropped() != 7 || s.Torn() != 0 {
		t.Fatalf("dropped %d torn %d", s.Dropped(), s.Torn())
	}
	if s.Strings().Lookup(1) != strs.Lookup(1) {
		t.Fatal("string table not rebuilt")
	}
}

// A stream cut anywhere yields exactly the events of the chunks complete before the cut, and no error.
func TestStreamCutAnywhere(t *testing.T) {
	evs, strs := sample(50)
	data, ends, counts := writeStream(t, evs, strs, 10)
	for cut := headerSize; cut <= len(data); cut++ {
		want := 0
		complete := false
		for i, e := range ends {
			if e <= int64(cut) {
				want = counts[i]
				complete = e == int64(cut)
			}
		}
		s, got, err := readStream(data[:cut])
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		if len(got) != want {
			t.Fatalf("cut at %d: %d events, want %d", cut, len(got), want)
		}
		if torn := s.Torn() > 0; torn == complete && cut > headerSize {
			t.Fatalf("cut at %d: torn %d bytes, at a chunk boundary: %v", cut, s.Torn(), complete)
		}
	}
}

func TestStreamDamage(t *testing.T) {
	evs, strs := sample(50)
	data, ends, _ := writeStream(t, evs, strs, 10)
	bad := bytes.Clone(data)
	bad[ends[1]+5] ^= 0x55 // inside the first Events chunk
	_, got, err := readStream(bad)
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Offset != ends[1] {
		t.Fatalf("err %v, want a corruption at offset %d", err, ends[1])
	}
	if len(got) != 0 {
		t.Fatalf("%d events read past damage", len(got))
	}
	if _, err := NewStreamReader("x", bytes.NewReader([]byte("hello world, not a recording"))); !errors.Is(err, ErrNotRecording) {
		t.Fatalf("not a recording: %v", err)
	}
	newer := bytes.Clone(data[:headerSize])
	newer[8] = 9
	if _, err := NewStreamReader("x", bytes.NewReader(newer)); !errors.Is(err, ErrNewerVersion) {
		t.Fatalf("newer version: %v", err)
	}
}

// FuzzStreamReader: arbitrary bytes never panic and never allocate beyond the chunk limit.
func FuzzStreamReader(f *testing.F) {
	evs, strs := sample(40)
	data, _, _ := writeStream(f, evs, strs, 10)
	f.Add(data)
	f.Add(data[:len(data)/2])
	f.Add(header(Version))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := NewStreamReader("fuzz", bytes.NewReader(data))
		if err != nil {
			return
		}
		n := 0
		for s.Next() {
			n += len(s.At())
		}
		if n > len(data) {
			t.Fatalf("%d events from %d bytes", n, len(data))
		}
	})
}
