package recordings

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// inFlightFile is a recording of evs whose run stopped early with f in flight.
func inFlightFile(t testing.TB, evs []timeline.Event, s *timeline.Strings, f InFlight) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter("mem", &buf)
	if err != nil {
		t.Fatal(err)
	}
	rec := &Recording{Meta: Meta{Source: "sim", Devices: 16}, Strings: s, Events: evs, InFlight: &f,
		Outcome: [][2]string{{"ended", "watchdog"}}}
	if err := WriteRecording(w, rec); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// What a run had in flight when it stopped comes back as it was written, from a file and from a
// stream, and costs the events nothing: they are the same, and none of the in-flight ops is
// among them (they never ended).
func TestInFlightRoundTrip(t *testing.T) {
	evs, s := sample(40)
	flying, _ := sample(7)
	for _, now := range []int64{0, 2_200_000_000, math.MaxInt64 / 2} {
		f := InFlight{Now: now, Events: flying}
		data := inFlightFile(t, evs, s, f)
		rec, err := ReadAll("mem", data, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if rec.InFlight == nil || rec.InFlight.Now != now || !slices.Equal(rec.InFlight.Events, flying) {
			t.Errorf("now %d: read back %+v; want %d events at %d", now, rec.InFlight, len(flying), now)
		}
		if !slices.Equal(rec.Events, evs) {
			t.Errorf("now %d: %d events read back; want the %d written", now, len(rec.Events), len(evs))
		}
		sr, err := NewStreamReader("mem", bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for sr.Next() {
			n += len(sr.At())
		}
		if got := sr.InFlight(); sr.Err() != nil || n != len(evs) || got == nil || got.Now != now || !slices.Equal(got.Events, flying) {
			t.Errorf("now %d, as a stream: %d events, in flight %+v, err %v", now, n, got, sr.Err())
		}
	}
	// A run that ended normally has none.
	rec, err := ReadAll("mem", write(t, evs, s, 10), Options{})
	if err != nil || rec.InFlight != nil {
		t.Errorf("a recording without an InFlight chunk: %+v, %v; want none", rec.InFlight, err)
	}
}

// The recorder writes what SetInFlight kept when it closes; a label it never wrote (of an op that
// never ran before) is left out rather than name another string.
func TestRecorderInFlight(t *testing.T) {
	evs, s := sample(20)
	var buf bytes.Buffer
	w, err := NewWriter("mem", &buf)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRecorder(w, s, Meta{Source: "sim", Devices: 16})
	if err != nil {
		t.Fatal(err)
	}
	for i := range evs {
		r.Emit(&evs[i])
	}
	flying := []timeline.Event{
		{Kind: timeline.KindCollective, Start: 5, End: 9, Device: 3, Stream: 1, Op: 77, Label: evs[1].Label},
		{Kind: timeline.KindKernel, Start: 6, End: 9, Device: 4, Stream: 1, Op: 78, Label: 1 << 20},
	}
	r.SetInFlight(9, flying)
	flying[0].Op = 1 // the caller's slice is its own again
	if err := r.Close(nil); err != nil {
		t.Fatal(err)
	}
	rec, err := ReadAll("mem", buf.Bytes(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []timeline.Event{
		{Kind: timeline.KindCollective, Start: 5, End: 9, Device: 3, Stream: 1, Op: 77, Label: evs[1].Label},
		{Kind: timeline.KindKernel, Start: 6, End: 9, Device: 4, Stream: 1, Op: 78},
	}
	if rec.InFlight == nil || rec.InFlight.Now != 9 || !slices.Equal(rec.InFlight.Events, want) {
		t.Errorf("in flight read back %+v; want %+v at 9", rec.InFlight, want)
	}
}

// inFlightChunk is a file of an InFlight chunk of payload, then an Outcome chunk: damage in the
// first is mid-file, not a torn tail.
func inFlightChunk(payload []byte) []byte {
	return appendChunk(appendChunk(header(Version), ChunkInFlight, payload), ChunkOutcome, appendKV(nil, [][2]string{{"ended", "watchdog"}}))
}

// A damaged InFlight payload is a CorruptionError naming the chunk's offset and what is bad.
func TestInFlightDamaged(t *testing.T) {
	for _, c := range []struct {
		name    string
		payload []byte
		want    string
	}{
		{"empty", nil, "in-flight time: short or overlong varint"},
		{"beyond the largest time", binary.AppendUvarint(nil, math.MaxUint64), "is beyond the largest time"},
		{"no events", binary.AppendUvarint(nil, 5), "in-flight events: event count"},
		{"more events than bytes", binary.AppendUvarint(binary.AppendUvarint(nil, 5), 1000), "does not fit"},
	} {
		data := inFlightChunk(c.payload)
		_, err := ReadAll("fuzz.xfr", data, Options{})
		var ce *CorruptionError
		if !errors.As(err, &ce) || ce.Offset != headerSize || !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
			t.Errorf("%s: %v; want a CorruptionError at offset %d saying %q", c.name, err, headerSize, c.want)
		}
	}
}

// FuzzInFlight frames arbitrary bytes as a sound InFlight chunk (a valid checksum, so that the
// fuzzer reaches the decoder): the reader must never panic, and what it reads must re-encode to
// the same.
func FuzzInFlight(f *testing.F) {
	flying, _ := sample(7)
	f.Add(appendInFlight(nil, &InFlight{Now: 2_200_000_000, Events: flying}))
	f.Add(appendInFlight(nil, &InFlight{Now: math.MaxInt64 / 2}))
	f.Add(binary.AppendUvarint(nil, math.MaxUint64))
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, payload []byte) {
		data := inFlightChunk(payload)
		rec, err := ReadAll("fuzz.xfr", data, Options{})
		if err != nil {
			var ce *CorruptionError
			if !errors.As(err, &ce) || ce.File != "fuzz.xfr" || ce.Offset != headerSize {
				t.Fatalf("error %v; want a CorruptionError naming fuzz.xfr at offset %d", err, headerSize)
			}
			return
		}
		if rec.InFlight == nil {
			t.Fatal("a sound InFlight chunk read back as none")
		}
		again, err := decodeInFlight(appendInFlight(nil, rec.InFlight))
		if err != nil || again.Now != rec.InFlight.Now || !slices.Equal(again.Events, rec.InFlight.Events) {
			t.Fatalf("re-encoding %+v: %+v, %v", rec.InFlight, again, err)
		}
	})
}
