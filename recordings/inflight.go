package recordings

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/xfertop/xfertop/timeline"
)

// InFlight is what a run had in flight when it stopped early (a watchdog fired, or the ranks
// deadlocked): the ops under way and the waits, as the engine's InFlight reported them, and the
// time the diagnosis looked at them. Those ops never ended, so no Events chunk holds them; a replay
// gives them to the diagnosis at the end, as the live run did, and so names the same root
// (docs/recording-format.md, type 8).
type InFlight struct {
	Now    int64 // the time the diagnosis looked (≥ 0)
	Events []timeline.Event
}

// appendInFlight encodes an InFlight payload: uvarint Now, then an Events payload.
func appendInFlight(dst []byte, f *InFlight) []byte {
	dst = binary.AppendUvarint(dst, uint64(max(f.Now, 0)))
	return appendEvents(dst, f.Events)
}

// decodeInFlight decodes an InFlight payload; damage is an error saying which part is bad.
func decodeInFlight(payload []byte) (InFlight, error) {
	now, n := binary.Uvarint(payload)
	if n <= 0 {
		return InFlight{}, errors.New("in-flight time: short or overlong varint")
	}
	if now > math.MaxInt64 {
		return InFlight{}, fmt.Errorf("in-flight time %d is beyond the largest time", now)
	}
	evs, err := decodeEvents(nil, payload[n:])
	if err != nil {
		return InFlight{}, fmt.Errorf("in-flight events: %w", err)
	}
	return InFlight{Now: int64(now), Events: evs}, nil
}

// WriteInFlight writes an InFlight chunk: at most MaxChunkEvents of f's events (the first).
func (w *Writer) WriteInFlight(f InFlight) error {
	if len(f.Events) > MaxChunkEvents {
		f.Events = f.Events[:MaxChunkEvents]
	}
	w.buf = appendInFlight(w.buf[:0], &f)
	return w.write(ChunkInFlight, w.buf, 0, 0, 0)
}
