package kineto

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// FuzzRunRecord: a record of the sort's runs decodes to the item it was made of, whatever the
// fields (sentinels, negative times, every bit set), and arbitrary bytes never panic the decoder.
func FuzzRunRecord(f *testing.F) {
	f.Add(int64(0), int64(0), int64(math.MinInt64), uint64(0), int32(-1), uint32(0), []byte{})
	f.Add(int64(-5), int64(1)<<62, int64(7), uint64(math.MaxUint64), int32(math.MaxInt32), uint32(math.MaxUint32), []byte{0xff, 0x80, 0x01})
	f.Fuzz(func(t *testing.T, start, dur, queued int64, op uint64, dev int32, u uint32, junk []byte) {
		it := item{ev: timeline.Event{Start: start, End: start + dur, Queued: queued, Bytes: dur, Op: op, Device: dev, Peer: -dev,
			Stream: u, Group: u >> 1, Comm: u >> 2, Barrier: u >> 3, Label: u >> 4, Aux: u >> 5, Host: uint16(u), Ranks: uint16(u >> 16),
			Kind: timeline.Kind(u), Sub: uint8(u >> 8), Status: uint8(u >> 16), Priority: int8(u >> 24)},
			seq: int64(op >> 1), org: origin(op), flags: uint8(u)}
		prev := recBase{start: queued, seq: int64(op), org: origin(u)}
		rec := appendItem(nil, &it, prev)
		var back item
		if err := decodeItem(rec, &back, prev); err != nil || !reflect.DeepEqual(back, it) {
			t.Fatalf("decodeItem(appendItem(%+v)) = %+v, %v", it, back, err)
		}
		if err := decodeItem(append(rec, 0), &back, prev); err == nil {
			t.Fatal("a record with a byte left over decodes")
		}
		_ = decodeItem(junk, &back, prev)
		_ = decodeItem(rec[:len(rec)/2], &back, prev)
	})
}

// TestCorrTable: the table of correlations answers as a map holding the last capacity keys would,
// through growth, collisions and deletions by shifting back; a key it forgot is counted as lost
// when looked up.
func TestCorrTable(t *testing.T) {
	const capacity = 64
	tab := newCorrTable(capacity)
	type key struct {
		file int
		corr uint64
	}
	model := map[key]int64{}
	var order []key
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		k := key{rng.IntN(3), uint64(rng.IntN(300))}
		if rng.IntN(2) == 0 {
			k.corr += uint64(i) // mostly new ids, as a trace's grow
		}
		start := int64(i)
		if _, ok := model[k]; !ok {
			if len(order) == capacity {
				delete(model, order[0])
				order = order[1:]
			}
			order = append(order, k)
			model[k] = start
		}
		if old := model[k]; start > old {
			model[k] = start // the last launch of a correlation wins
		}
		tab.put(k.file, k.corr, start, int64(i), flagLaunch)
		probe := key{rng.IntN(3), uint64(rng.IntN(300 + i))}
		want, ok := model[probe]
		got, _, gok := tab.launch(probe.file, probe.corr)
		if ok != gok || (ok && got != want) {
			t.Fatalf("step %d: launch(%v) = %d, %v; want %d, %v", i, probe, got, gok, want, ok)
		}
	}
	if tab.n != capacity || len(tab.direct) > 2*capacity || len(tab.slots) > 2*capacity || tab.lost == 0 {
		t.Errorf("%d keys in %d direct and %d hashed slots, %d lost; want %d in at most %d each, and some lost",
			tab.n, len(tab.direct), len(tab.slots), tab.lost, capacity, 2*capacity)
	}
	direct, hashed := usedSlots(tab.direct), usedSlots(tab.slots)
	if direct+hashed != capacity || hashed != tab.hashed || direct == 0 || hashed == 0 {
		t.Errorf("%d direct and %d hashed slots used (%d counted); want %d in all, some in each", direct, hashed, tab.hashed, capacity)
	}
}

// usedSlots counts the slots of a table that hold a key.
func usedSlots(slots []corrEntry) int {
	n := 0
	for _, e := range slots {
		if e.used {
			n++
		}
	}
	return n
}

// TestCorrDirect: the ids of one file in sequence, and ids a little out of order, each the launch
// of a GPU op looked up a while later, are kept in the direct table alone, through its growth; so
// are those of a second file running through the same ids at the same time (another rank of the
// job), each file's launches its own. Ids a table's size apart share a direct slot: the later one
// goes to the hashed table. Forgotten ids are counted as such when looked up, and only they.
func TestCorrDirect(t *testing.T) {
	const capacity = 1 << 10
	tab := newCorrTable(capacity)
	for i := range uint64(10 * capacity) {
		corr := i ^ 3 // a little out of order
		for file := range 2 {
			tab.put(file, corr, int64(corr)-int64(file), int64(i), flagLaunch)
		}
		if i >= 100 {
			back := (i - 100) ^ 3
			for file := range 2 {
				if got, _, ok := tab.launch(file, back); !ok || got != int64(back)-int64(file) {
					t.Fatalf("launch(%d, %d) = %d, %v; want %d", file, back, got, ok, int64(back)-int64(file))
				}
			}
		}
	}
	if tab.hashed != 0 || usedSlots(tab.slots) != 0 || usedSlots(tab.direct) != capacity {
		t.Fatalf("%d keys hashed, %d direct; want all %d direct", tab.hashed, usedSlots(tab.direct), capacity)
	}
	if tab.lost != 0 {
		t.Fatalf("%d lookups counted as forgotten; want none", tab.lost)
	}

	tab = newCorrTable(capacity)
	for id := range uint64(capacity) {
		tab.put(0, id, int64(id), int64(id), flagLaunch)
	}
	size := uint64(len(tab.direct))
	for k := range uint64(capacity / 2) {
		// each forgets id k and takes the direct slot of id capacity/2+k, which is held
		id := size + capacity/2 + k
		tab.put(0, id, -int64(id), int64(capacity+k), flagLaunch)
	}
	if tab.hashed != capacity/2 || usedSlots(tab.direct) != capacity/2 {
		t.Fatalf("%d keys hashed, %d direct; want %d each", tab.hashed, usedSlots(tab.direct), capacity/2)
	}
	for id := range uint64(capacity) {
		if got, _, ok := tab.launch(0, id); ok != (id >= capacity/2) || ok && got != int64(id) {
			t.Fatalf("launch(0, %d) = %d, %v; want it forgotten below %d", id, got, ok, capacity/2)
		}
		if id >= capacity/2 {
			far := size + id
			if got, _, ok := tab.launch(0, far); !ok || got != -int64(far) {
				t.Fatalf("launch(0, %d) = %d, %v; want %d", far, got, ok, -int64(far))
			}
		}
	}
	if tab.lost != capacity/2 {
		t.Errorf("%d lookups counted as forgotten; want %d", tab.lost, capacity/2)
	}
}

// TestRunReadBack: a run reads back as written, its records decoded in the read buffer or, where
// one straddles the buffer's end, copied out of it; a run damaged under the import (cut short, or
// a record's length or body garbled) fails with an error naming the file and the byte offset.
func TestRunReadBack(t *testing.T) {
	dir := t.TempDir()
	sp := &spill{dir: dir}
	defer sp.close()
	w, err := sp.create()
	if err != nil {
		t.Fatal(err)
	}
	var want []item
	for i := range 5000 { // about 100 KB: the 32 KiB read buffer ends within records
		it := item{ev: timeline.Event{Start: int64(i) * 1000, End: int64(i)*1000 + 7, Queued: -1, Label: uint32(i % 97), Device: 3},
			seq: int64(i), org: makeOrigin(0, int64(i)), flags: flagPending}
		if i%3 == 0 {
			it.ev.Bytes = 1 << 40 // a longer record now and then
		}
		want = append(want, it)
		if err := w.write(&it); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	path := sp.ready[0]
	intact, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []item
	if err := mergeRuns([]string{path}, func(it *item) error { got = append(got, *it); return nil }); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("read back %d items (%v); want the %d written", len(got), err, len(want))
	}
	for _, tc := range []struct {
		name   string
		damage func([]byte) []byte
	}{
		{"cut short", func(b []byte) []byte { return b[:len(b)-3] }},
		{"length garbled", func(b []byte) []byte { b[recordAt(b, len(b)/2)] = 0xff; return b }},
		{"body garbled", func(b []byte) []byte {
			for i := len(b) / 3; i < len(b)/3+40; i++ {
				b[i] = 0x80
			}
			return b
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(path, tc.damage(bytes.Clone(intact)), 0o600); err != nil {
				t.Fatal(err)
			}
			err := mergeRuns([]string{path}, func(*item) error { return nil })
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "byte offset") {
				t.Fatalf("mergeRuns of a damaged run = %v; want an error naming %s and the offset", err, path)
			}
		})
	}
}

// recordAt is the offset of the first record of a run that starts at or after off.
func recordAt(run []byte, off int) int {
	at := 0
	for at < off {
		n, k := binary.Uvarint(run[at:])
		at += k + int(n)
	}
	return at
}

// TestCorrHome: a file's consecutive correlation ids keep to neighbouring slots in runs of 16
// (lookups walk the table in order), and the runs of two files, or of far apart ids, spread.
func TestCorrHome(t *testing.T) {
	var tab corrTable
	for base := uint64(0); base < 1<<20; base += 16 * 997 {
		base -= base % 16
		h := tab.home(3, base)
		for i := range uint64(16) {
			if got := tab.home(3, base+i); got != h+int(i) {
				t.Fatalf("home(3, %d) = %d; want %d (the run's first %d + %d)", base+i, got, h+int(i), h, i)
			}
		}
		if tab.home(4, base) == h && tab.home(3, base+16) == h+16 {
			t.Fatalf("runs at %d: another file's and the next run's homes follow on", base)
		}
	}
}
