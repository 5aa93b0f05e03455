package nsys

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/xfertop/xfertop/importers/nsys/pagescan"
)

// TestRowStoreRoundTrip: rows put in a store come back as they went in, column by column: NULLs,
// values far apart and at the ends of int64 (the differences wrap), texts where they lie in the
// file (empty ones too); a store whose budget is spent, or given a text that is not in the file,
// refuses the row, and gives its room back when released.
func TestRowStoreRoundTrip(t *testing.T) {
	file := []byte("aten::mul, seq = 1ProfilerStep#3name")
	tbl := tables[len(tables)-1] // NVTX: rowid, start, end, eventType, text, textId, globalTid
	if tbl.name != tableNVTX || tbl.text != 4 {
		t.Fatalf("table %s, text column %d: want NVTX's, 4", tbl.name, tbl.text)
	}
	var left atomic.Int64
	left.Store(1 << 20)
	s := newRowStore(tbl, file, &left)
	r := rand.New(rand.NewPCG(1, 2))
	slot := []int{0, 1, 2, 3, 4, 5} // t.cols after the rowid, at these places in the Row
	row := pagescan.Row{Ints: make([]int64, 6), Null: make([]bool, 6), Text: make([][]byte, 6)}
	type want struct {
		v    [7]int64
		null [7]bool
		text string
	}
	var wants []want
	specials := []int64{0, -1, 1, math.MaxInt64, math.MinInt64, 1 << 40, -(1 << 50)}
	for i := range 3000 {
		var w want
		row.Rowid = int64(i)*3 + 1
		w.v[0] = row.Rowid
		for c := range 6 {
			v := int64(r.Uint64())
			switch r.IntN(3) {
			case 0:
				v = specials[r.IntN(len(specials))]
			case 1:
				v = int64(i)*1000 + int64(r.IntN(50)) // in start order, as times are
			}
			row.Ints[c], row.Null[c], row.Text[c] = v, r.IntN(5) == 0, nil
			w.v[c+1], w.null[c+1] = v, row.Null[c]
			if c+1 == tbl.text && !row.Null[c] {
				lo := r.IntN(len(file))
				hi := lo + r.IntN(len(file)-lo+1)
				row.Text[c], w.text = file[lo:hi], string(file[lo:hi])
				w.v[c+1] = 0
			}
			if row.Null[c] {
				w.v[c+1] = 0
			}
		}
		if !s.add(&row, slot) {
			t.Fatalf("row %d refused with %d bytes of budget left", i, left.Load())
		}
		wants = append(wants, w)
	}
	rd := storeRows{s: s}
	var got rowVals
	for i, w := range wants {
		if !rd.next(&got) {
			t.Fatalf("the rows end at %d of %d", i, len(wants))
		}
		if [7]int64(got.v[:7]) != w.v || [7]bool(got.null[:7]) != w.null || string(got.text) != w.text || (got.text == nil) != got.null[tbl.text] {
			t.Fatalf("row %d: %v %v %q; want %v %v %q", i, got.v[:7], got.null[:7], got.text, w.v, w.null, w.text)
		}
	}
	if rd.next(&got) {
		t.Fatal("a row past the last")
	}
	// A text that is not in the file is refused.
	row.Null[3], row.Text[3] = false, []byte("elsewhere")
	if s.add(&row, slot) {
		t.Error("a text outside the file was kept")
	}
	// The budget: spent, a row is refused; released, it is whole again.
	taken := s.took
	s.release()
	if left.Load() != 1<<20 || taken == 0 {
		t.Errorf("budget %d after release (the store took %d), want %d", left.Load(), taken, 1<<20)
	}
	left.Store(firstChunk - 1)
	small := newRowStore(tbl, file, &left)
	row.Text[3] = file[:4]
	if small.add(&row, slot) || left.Load() != firstChunk-1 {
		t.Errorf("a row kept past the budget, or the budget changed: %d left", left.Load())
	}
}
