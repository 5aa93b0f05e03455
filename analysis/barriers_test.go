package analysis

import (
	"slices"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// barrierAt makes one barrier: rank r arrives at arrivals[r], every rank is released at release.
// Events come in the order of perm (rank numbers), as the ranks report.
func barrierAt(op uint64, release int64, arrivals []int64, perm ...int) []timeline.Event {
	if perm == nil {
		for r := range arrivals {
			perm = append(perm, r)
		}
	}
	var evs []timeline.Event
	for _, r := range perm {
		evs = append(evs, barrierEv(int32(r), op, len(arrivals), arrivals[r], release))
	}
	return evs
}

func TestBarrierOneInstance(t *testing.T) {
	// Five ranks arrive at 0, 10, 20, 30 and 100, released at 110: the median arrival is 20, the
	// straggler rank 4, 80 ns late; the waits are 110, 100, 90, 80, 10.
	evs := barrierAt(5, 110, []int64{0, 10, 20, 30, 100}, 3, 1, 4, 0, 2)
	b := analyze(timeline.Meta{}, evs...).Barriers
	if b.Count != 1 || b.WaitNs != 110+100+90+80+10 || b.MaxWaitNs != 110 || b.Open != 0 || b.Incomplete != 0 {
		t.Errorf("barriers = %+v", b)
	}
	if len(b.Stragglers) != 1 || b.Stragglers[0].Rank != 4 || b.Stragglers[0].TimesLast != 1 {
		t.Fatalf("stragglers = %+v; want rank 4 once", b.Stragglers)
	}
	eqPtrI(t, "lateness p50", b.Stragglers[0].LatenessNs50, i64(80))
	if len(b.Recent) != 1 {
		t.Fatalf("recent = %+v", b.Recent)
	}
	in := b.Recent[0]
	want := []Arrival{{0, 0, 110}, {1, 10, 100}, {2, 20, 90}, {3, 30, 80}, {4, 100, 10}}
	if in.Op != 5 || in.Release != 110 || in.Straggler != 4 || in.LatenessNs != 80 || !slices.Equal(in.Arrivals, want) {
		t.Errorf("instance = %+v; want arrivals in rank order %v", in, want)
	}
}

func TestBarrierLateness(t *testing.T) {
	tests := []struct {
		name      string
		arrivals  []int64
		straggler int32
		lateness  int64
	}{
		// Nearest-rank median: with an even count, the lower of the two middle arrivals.
		{"four ranks", []int64{0, 10, 20, 100}, 3, 90},
		{"first rank last", []int64{50, 0, 0}, 0, 50},
		{"two ranks", []int64{0, 40}, 1, 40},
		{"last by 1 ns", []int64{5, 5, 6}, 2, 1},
		// Nobody was late: no rank is named (timeline.NoDevice), none counted.
		{"all together", []int64{7, 7, 7}, timeline.NoDevice, 0},
		{"tie for last", []int64{0, 30, 30, 10}, timeline.NoDevice, 0},
		{"two ranks together", []int64{40, 40}, timeline.NoDevice, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := analyze(timeline.Meta{}, barrierAt(1, 1000, tc.arrivals)...).Barriers
			if len(b.Recent) != 1 || b.Recent[0].Straggler != tc.straggler || b.Recent[0].LatenessNs != tc.lateness {
				t.Errorf("recent = %+v; want straggler %d, %d ns late", b.Recent, tc.straggler, tc.lateness)
			}
			if named := tc.straggler != timeline.NoDevice; (len(b.Stragglers) == 1) != named {
				t.Errorf("stragglers = %+v; want one only when a rank was late", b.Stragglers)
			}
		})
	}
}

func TestBarrierStragglersSorted(t *testing.T) {
	var evs []timeline.Event
	evs = append(evs, barrierAt(1, 200, []int64{0, 10, 20, 100})...)     // rank 3, 90 late
	evs = append(evs, barrierAt(2, 400, []int64{300, 350, 310, 300})...) // rank 1, 50 late
	evs = append(evs, barrierAt(3, 600, []int64{500, 510, 500, 540})...) // rank 3, 40 late
	evs = append(evs, barrierAt(4, 800, []int64{760, 700, 700, 700})...) // rank 0, 60 late
	evs = append(evs, barrierAt(5, 900, []int64{850})...)                // one rank: no straggler
	b := analyze(timeline.Meta{}, evs...).Barriers
	if b.Count != 5 {
		t.Errorf("Count = %d; want 5", b.Count)
	}
	type row struct {
		rank  int32
		times int64
		p50   int64
	}
	var got []row
	for _, s := range b.Stragglers {
		got = append(got, row{s.Rank, s.TimesLast, *s.LatenessNs50})
	}
	// Most often last first; ties by rank. Rank 3's lateness p50 of {90, 40} is 40 (nearest rank).
	want := []row{{3, 2, 40}, {0, 1, 60}, {1, 1, 50}}
	if !slices.Equal(got, want) {
		t.Errorf("stragglers = %+v; want %+v", got, want)
	}
	if b.MaxWaitNs != 200 || b.WaitNs != (200+190+180+100)+(100+50+90+100)+(100+90+100+60)+(40+100+100+100)+50 {
		t.Errorf("wait total %d, max %d", b.WaitNs, b.MaxWaitNs)
	}
}

func TestBarrierOpenAndBounded(t *testing.T) {
	b := analyze(timeline.Meta{}, barrierEv(0, 1, 3, 0, 10), barrierEv(1, 1, 3, 5, 10)).Barriers
	if b.Count != 0 || b.Open != 1 || b.WaitNs != 0 {
		t.Errorf("barriers = %+v; want one open, none counted", b)
	}
	var evs []timeline.Event
	for op := range uint64(maxOpenInstances + 7) {
		evs = append(evs, barrierEv(0, op+1, 2, int64(op), int64(op)+10))
	}
	b = analyze(timeline.Meta{}, evs...).Barriers
	if b.Open != maxOpenInstances || b.Incomplete != 7 {
		t.Errorf("open, incomplete = %d, %d; want %d, 7", b.Open, b.Incomplete, maxOpenInstances)
	}
}

func TestBarrierRecentKept(t *testing.T) {
	var evs []timeline.Event
	for op := range uint64(RecentBarriersKept + 30) {
		evs = append(evs, barrierAt(op+1, int64(op)*10+5, []int64{int64(op) * 10, int64(op) * 10})...)
	}
	b := analyze(timeline.Meta{}, evs...).Barriers
	if len(b.Recent) != RecentBarriersKept || b.Recent[0].Op != 31 || b.Recent[len(b.Recent)-1].Op != RecentBarriersKept+30 {
		t.Errorf("recent: %d kept, first op %d, last %d; want %d, 31, %d", len(b.Recent), b.Recent[0].Op,
			b.Recent[len(b.Recent)-1].Op, RecentBarriersKept, RecentBarriersKept+30)
	}
}
