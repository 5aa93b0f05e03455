package idle

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xfertop/xfertop/analysis"
)

// The rows a frame orders (first k) are exactly the first k rows of Groups, whatever k, on rows
// with many ties in cost and role.
func TestFirstIsGroupsPrefix(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var si analysis.StreamGaps
	for d := range int32(64) {
		for s := range uint32(4) {
			st := analysis.StreamIdle{Device: d, Stream: s + 1, Role: []string{"compute", "transfer"}[rng.IntN(2)]}
			for _, c := range analysis.Causes() {
				if rng.IntN(3) > 0 {
					st.ByCause[c] = int64(rng.IntN(5)) * 1000 // 0 (none) or one of four costs: ties
				}
			}
			si.Streams = append(si.Streams, st)
		}
	}
	want := Groups(&si)
	if len(want) < 300 {
		t.Fatalf("only %d rows", len(want))
	}
	for _, k := range []int{0, 1, 2, 7, 40, 100, len(want) - 1, len(want), len(want) + 5} {
		got := first(appendGroups(nil, &si), k)
		if n := min(k, len(want)); !slices.Equal(got, want[:n]) {
			t.Errorf("first(%d) differs from Groups[:%d]:\n got %v\nwant %v", k, n, got, want[:n])
		}
	}
}
