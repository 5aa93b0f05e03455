package analysis

import (
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// The bytes moved on links do not depend on the order the ops arrive in (attach's live stream and
// a merged replay of the same job deliver them differently), and equal the exact sum of bytes ×
// the bus factor, computed here in rationals, rounded once.
func TestMovedBytesExactInAnyOrder(t *testing.T) {
	meta := timeline.Meta{Devices: 8, GPUsPerHost: 8}
	r := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name string
		evs  []timeline.Event
	}{
		{name: "attach's 3-rank job: 12 all-reduces of 16 KiB", evs: func() []timeline.Event {
			var evs []timeline.Event
			for i := range 12 {
				evs = append(evs, collEv(timeline.CollAllReduce, 3, int32(i%3), uint64(i/3), int64(i), int64(i+1), 16384))
			}
			return evs
		}()},
		{name: "mixed collectives, rank counts and sizes", evs: func() []timeline.Event {
			var evs []timeline.Event
			ops := []timeline.CollOp{timeline.CollAllReduce, timeline.CollAllGather, timeline.CollReduceScatter, timeline.CollBroadcast, timeline.CollAllToAll}
			for i := range 2000 {
				n := 2 + r.IntN(7)
				evs = append(evs, collEv(ops[r.IntN(len(ops))], n, int32(r.IntN(8)), uint64(i), int64(i), int64(i+1), 1+r.Int64N(1<<30)))
			}
			return evs
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			exact := new(big.Rat)
			for _, e := range tc.evs {
				num, den := timeline.CollOp(e.Sub).BusFraction(int(e.Ranks))
				exact.Add(exact, big.NewRat(e.Bytes*num, den))
			}
			want, _ := new(big.Rat).Add(exact, big.NewRat(1, 2)).Float64() // no fraction is exactly ½ here
			orders := [][]timeline.Event{tc.evs, slices.Clone(tc.evs), slices.Clone(tc.evs)}
			slices.Reverse(orders[1])
			r.Shuffle(len(orders[2]), func(i, j int) { orders[2][i], orders[2][j] = orders[2][j], orders[2][i] })
			for i, evs := range orders {
				if got := analyze(meta, evs...).Links.MovedBytes; float64(got) > want || float64(got) <= want-1 {
					t.Errorf("order %d: moved %d bytes; want %.1f rounded down (exact %s)", i, got, want, exact.FloatString(3))
				}
			}
		})
	}
}
