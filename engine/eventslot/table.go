package eventslot

const (
	slotBits = 20
	slotMask = 1<<slotBits - 1
	genMask  = 1<<(32-slotBits) - 1

	// ReuseFrom is how many slots exist before those of done events are reused: an id stays valid
	// for at least this many newer events.
	ReuseFrom = 1 << 16
	// MaxLive is how many events may be live (handed out and not yet done) at once.
	MaxLive = slotMask
)

// Table holds a state of type T per live event. The zero Table is ready to use. Slot 0 is never
// handed out, so id 0 can mean "no event".
type Table[T any] struct {
	// vals holds the states in chunks of chunkLen that never move: growing the table copies
	// none of the states already there (a table grows to ReuseFrom slots in every run).
	vals [][]T
	gens []uint32
	free []int32 // slots of done events, oldest first, from head on
	head int
}

// chunkLen is how many states a chunk of the table holds.
const chunkLen = 1 << 12

// val returns slot's state.
func (t *Table[T]) val(slot int) *T { return &t.vals[slot/chunkLen][slot%chunkLen] }

// grow adds a slot and returns it.
func (t *Table[T]) grow() int {
	slot := len(t.gens)
	if slot%chunkLen == 0 {
		t.vals = append(t.vals, make([]T, chunkLen))
	}
	t.gens = append(t.gens, 0)
	return slot
}

// New returns a fresh id and a pointer to its zeroed state, valid until the next New. prev is what
// a reused slot held before (the zero T for a new slot), for the caller to recycle. ok is false when
// MaxLive events are live: the workload creates events it never records.
func (t *Table[T]) New() (id uint32, state *T, prev T, ok bool) {
	var zero T
	if len(t.gens) == 0 {
		t.grow() // slot 0: "no event"
	}
	var slot int
	if len(t.gens) >= ReuseFrom && t.head < len(t.free) {
		slot = int(t.free[t.head])
		t.head++
		switch {
		case t.head == len(t.free):
			t.free, t.head = t.free[:0], 0
		case t.head >= ReuseFrom/16 && 2*t.head >= len(t.free):
			// Once slots are reused the queue is consumed as fast as Done fills it and seldom
			// empties: drop its consumed half rather than let appends grow the array for ever.
			n := copy(t.free, t.free[t.head:])
			t.free, t.head = t.free[:n], 0
		}
		v := t.val(slot)
		prev, *v = *v, zero
		t.gens[slot] = (t.gens[slot] + 1) & genMask
	} else {
		if len(t.gens) > MaxLive {
			return 0, nil, prev, false
		}
		slot = t.grow()
	}
	return uint32(slot) | t.gens[slot]<<slotBits, t.val(slot), prev, true
}

// Get returns id's state, or nil when id is retired (its slot was reused after the event was
// done), is 0, or was never handed out.
func (t *Table[T]) Get(id uint32) *T {
	slot, gen := int(id&slotMask), id>>slotBits
	if slot == 0 || slot >= len(t.gens) || t.gens[slot] != gen {
		return nil
	}
	return t.val(slot)
}

// Done makes id's slot reusable once ReuseFrom slots exist. Call it once per id, when its event is
// recorded.
func (t *Table[T]) Done(id uint32) {
	t.free = append(t.free, int32(id&slotMask))
}

// Len returns how many slots exist (live and done events, bounded by about ReuseFrom plus the
// number live).
func (t *Table[T]) Len() int { return len(t.gens) }
