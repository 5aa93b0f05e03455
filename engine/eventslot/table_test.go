package eventslot

import "testing"

type state struct {
	recorded bool
	waiters  []int
}

// Ids are unique and non-zero; done slots are reused oldest first only past ReuseFrom slots; a
// retired id reads as nil; prev hands back what the reused slot held.
func TestTableReuse(t *testing.T) {
	var tb Table[state]
	if tb.Get(0) != nil || tb.Get(5) != nil {
		t.Fatal("an empty table returned state for ids it never handed out")
	}
	seen := map[uint32]bool{}
	var ids []uint32
	for i := range ReuseFrom - 1 {
		id, st, prev, ok := tb.New()
		if !ok || id == 0 || seen[id] || st == nil || prev.recorded {
			t.Fatalf("New #%d: id %d ok %v (seen %v)", i, id, ok, seen[id])
		}
		seen[id] = true
		ids = append(ids, id)
		st.recorded, st.waiters = true, []int{i}
		tb.Done(id)
	}
	if tb.Len() != ReuseFrom {
		t.Fatalf("Len %d; want %d (slot 0 and %d events)", tb.Len(), ReuseFrom, ReuseFrom-1)
	}
	// The table is full enough now: the next New reuses the oldest done slot.
	id, st, prev, ok := tb.New()
	if !ok || seen[id] || id&slotMask != ids[0]&slotMask || st.recorded || len(st.waiters) != 0 {
		t.Fatalf("reuse: id %#x (first was %#x), state %+v", id, ids[0], *st)
	}
	if !prev.recorded || len(prev.waiters) != 1 || prev.waiters[0] != 0 {
		t.Fatalf("prev = %+v; want the first event's state", prev)
	}
	if tb.Get(ids[0]) != nil {
		t.Error("the retired id still has state")
	}
	if got := tb.Get(id); got != st {
		t.Error("Get of the new id is not its state")
	}
	if got := tb.Get(ids[1]); got == nil || got.waiters[0] != 1 {
		t.Error("a done but not yet reused id lost its state")
	}
	if tb.Len() != ReuseFrom {
		t.Errorf("Len grew to %d while reusing", tb.Len())
	}
}

// Live events are never reused; generations wrap without colliding with live ids.
func TestTableLiveNotReused(t *testing.T) {
	var tb Table[int]
	live, _, _, _ := tb.New()
	for range 3 * ReuseFrom {
		id, _, _, ok := tb.New()
		if !ok || id&slotMask == live&slotMask {
			t.Fatalf("id %#x reuses the live event's slot (%#x)", id, live)
		}
		tb.Done(id)
	}
	if tb.Get(live) == nil {
		t.Fatal("the live event lost its state")
	}
	if tb.Len() > ReuseFrom+1 {
		t.Errorf("Len %d: done slots were not reused", tb.Len())
	}
}

// Past MaxLive live events New refuses instead of growing without bound.
func TestTableMaxLive(t *testing.T) {
	if testing.Short() {
		t.Skip("creates a million events")
	}
	var tb Table[struct{}]
	for range MaxLive {
		if _, _, _, ok := tb.New(); !ok {
			t.Fatal("refused before MaxLive")
		}
	}
	if _, _, _, ok := tb.New(); ok {
		t.Fatal("handed out more than MaxLive live events")
	}
}

// A slot's generation survives its reuse: each event that takes the slot gets a new id, and every
// earlier id of the slot reads as retired, however many times the slot was reused.
func TestTableGenerationSurvivesReuse(t *testing.T) {
	var tb Table[int]
	var slotIDs []uint32 // the ids slot 1 was handed out under, oldest first
	for range 6 * ReuseFrom {
		id, st, _, ok := tb.New()
		if !ok {
			t.Fatal("New refused")
		}
		*st = int(id)
		if id&slotMask == 1 {
			for _, old := range slotIDs {
				if old == id {
					t.Fatalf("slot 1 handed out id %#x twice", id)
				}
				if tb.Get(old) != nil {
					t.Fatalf("id %#x of an earlier event in slot 1 is not retired", old)
				}
			}
			slotIDs = append(slotIDs, id)
		}
		tb.Done(id)
	}
	if len(slotIDs) < 5 {
		t.Fatalf("slot 1 was reused %d times; want at least 5", len(slotIDs)-1)
	}
	if got := tb.Get(slotIDs[len(slotIDs)-1]); got == nil || *got != int(slotIDs[len(slotIDs)-1]) {
		t.Errorf("the newest id of slot 1 lost its state")
	}
}

// In an endless run the table's memory stays bounded: the queue of done slots is consumed as fast
// as it is filled once slots are reused, and must not keep the consumed part of its array.
func TestTableBoundedInSteadyState(t *testing.T) {
	var tb Table[int]
	live, _, _, _ := tb.New() // one event that is never recorded keeps the queue from emptying
	_ = live
	for range 10 * ReuseFrom {
		id, _, _, ok := tb.New()
		if !ok {
			t.Fatal("New refused")
		}
		tb.Done(id)
	}
	if tb.Len() > ReuseFrom+1 {
		t.Errorf("Len %d; want at most %d", tb.Len(), ReuseFrom+1)
	}
	if c := cap(tb.free); c > 3*ReuseFrom {
		t.Errorf("the queue of done slots holds an array of %d after %d events; want at most %d", c, 10*ReuseFrom, 3*ReuseFrom)
	}
}

// Growing the table moves no state already in it: a pointer New handed out still reads the same
// state after the table has grown past many chunks (the states are never copied as it grows).
func TestGrowingMovesNoState(t *testing.T) {
	var tb Table[int]
	first, st, _, _ := tb.New()
	*st = 7
	for range 3 * chunkLen {
		if _, _, _, ok := tb.New(); !ok {
			t.Fatal("New refused")
		}
	}
	if got := tb.Get(first); got != st || *got != 7 {
		t.Fatalf("the first state moved or changed as the table grew: %p (%v), was %p", got, got, st)
	}
}
