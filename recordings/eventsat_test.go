package recordings

import (
	"errors"
	"slices"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// EventsAt decodes any events chunk the index names, compressed or not, without moving the reader:
// a replay reading chunk k looks at chunk k+5 and reads on from k+1. A chunk whose bytes are
// damaged is a CorruptionError at its offset; an entry that names a chunk of another type is too.
func TestEventsAt(t *testing.T) {
	evs, s := sample(1000)
	for _, opts := range [][]WriterOption{nil, {WithoutCompression()}} {
		data := write(t, evs, s, 100, opts...)
		r, err := NewReader("mem", bytesReaderAt(data), int64(len(data)), Options{})
		if err != nil {
			t.Fatal(err)
		}
		var chunks []IndexEntry
		for _, e := range r.Index() {
			if e.Type == ChunkEvents || e.Type == ChunkEventsZstd {
				chunks = append(chunks, e)
			}
		}
		if len(chunks) != 10 {
			t.Fatalf("%d events chunks; want 10", len(chunks))
		}
		var ahead []timeline.Event
		for k := 0; r.Next(); k++ {
			if r.ChunkOffset() != chunks[k].Offset {
				t.Fatalf("chunk %d: ChunkOffset %d; the index says %d", k, r.ChunkOffset(), chunks[k].Offset)
			}
			at := slices.Clone(r.At())
			if ahead, err = r.EventsAt(chunks[(k+5)%10], ahead[:0]); err != nil {
				t.Fatal(err)
			}
			if want := evs[(k+5)%10*100:][:100]; !slices.Equal(ahead, want) {
				t.Errorf("EventsAt(chunk %d) gave %d events, not the chunk's", (k+5)%10, len(ahead))
			}
			if !slices.Equal(r.At(), at) || !slices.Equal(at, evs[k*100:][:100]) {
				t.Errorf("chunk %d: EventsAt changed the events At returns, or Next read the wrong chunk", k)
			}
		}
		if r.Err() != nil {
			t.Fatal(r.Err())
		}

		bad := slices.Clone(data)
		bad[chunks[3].Offset+20] ^= 0xff
		r, err = NewReader("mem", bytesReaderAt(bad), int64(len(bad)), Options{})
		if err != nil {
			t.Fatal(err)
		}
		var ce *CorruptionError
		if _, err := r.EventsAt(chunks[3], nil); !errors.As(err, &ce) || ce.Offset != chunks[3].Offset || !errors.Is(err, ErrChecksum) {
			t.Errorf("EventsAt of a damaged chunk: %v; want a checksum CorruptionError at offset %d", err, chunks[3].Offset)
		}
		wrong := chunks[3]
		wrong.Type = ChunkEvents + ChunkEventsZstd - chunks[3].Type
		if _, err := r.EventsAt(wrong, nil); !errors.As(err, &ce) {
			t.Errorf("EventsAt of an entry of the wrong type: %v; want a CorruptionError", err)
		}
	}
}
