package engine

import (
	"errors"
	"testing"
)

// A collective's one future (Client.CollectiveAll) takes a completion from each rank: it resolves
// at the last, keeps the first failure any rank reported, and runs OnDone once; a future of one op
// resolves at its first completion and ignores the rest.
func TestFutureCompleteCountsRanks(t *testing.T) {
	errA, errB := errors.New("rank a failed"), errors.New("rank b failed")
	type done struct {
		t   int64
		err error
	}
	for _, c := range []struct {
		name     string
		pending  int32
		calls    []done
		wantDone []bool // Done after each call
		wantErr  error
		wantAt   int64
	}{
		{name: "one op", calls: []done{{5, nil}, {9, errA}}, wantDone: []bool{true, true}, wantAt: 5},
		{name: "one op failed", calls: []done{{5, errA}, {9, nil}}, wantDone: []bool{true, true}, wantErr: errA, wantAt: 5},
		{name: "three ranks", pending: 2, calls: []done{{5, nil}, {7, nil}, {6, nil}, {9, errA}},
			wantDone: []bool{false, false, true, true}, wantAt: 6},
		{name: "three ranks, two failed", pending: 2, calls: []done{{5, nil}, {7, errB}, {8, errA}},
			wantDone: []bool{false, false, true}, wantErr: errB, wantAt: 8},
		{name: "three ranks, one never reports", pending: 2, calls: []done{{5, errA}, {7, nil}},
			wantDone: []bool{false, false}, wantErr: errA},
	} {
		t.Run(c.name, func(t *testing.T) {
			ran := 0
			f := &Future{op: 1, pending: c.pending, OnDone: func(*Future) { ran++ }}
			for i, d := range c.calls {
				f.Complete(d.t, d.err)
				if f.Done() != c.wantDone[i] {
					t.Errorf("after call %d: Done() = %v; want %v", i, f.Done(), c.wantDone[i])
				}
			}
			if !errors.Is(f.Err(), c.wantErr) || (c.wantErr == nil && f.Err() != nil) {
				t.Errorf("Err() = %v; want %v", f.Err(), c.wantErr)
			}
			if f.At() != c.wantAt {
				t.Errorf("At() = %d; want %d", f.At(), c.wantAt)
			}
			wantRan := 0
			if c.wantDone[len(c.wantDone)-1] {
				wantRan = 1
			}
			if ran != wantRan {
				t.Errorf("OnDone ran %d times; want %d", ran, wantRan)
			}
		})
	}
}
