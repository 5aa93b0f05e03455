package analysis

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// instance makes the parts of one collective: rank r on device r, starting and ending at the given
// times, each with bytes[r] (or bytes[0] for every rank when one size is given).
func instance(c timeline.CollOp, op uint64, starts, ends []int64, bytes ...int64) []timeline.Event {
	var evs []timeline.Event
	for r := range starts {
		b := bytes[0]
		if len(bytes) > 1 {
			b = bytes[r]
		}
		evs = append(evs, collEv(c, len(starts), int32(r), op, starts[r], ends[r], b))
	}
	return evs
}

func TestCollectiveInstanceTime(t *testing.T) {
	// Four ranks start at 100..130 and end at 1050..1100: the instance takes 1100 − 100 = 1000 ns.
	evs := instance(timeline.CollAllReduce, 7, []int64{110, 100, 130, 120}, []int64{1050, 1100, 1060, 1070}, 1_000_000)
	c := analyze(timeline.Meta{}, evs...).Collectives
	if len(c.Rows) != 1 {
		t.Fatalf("rows = %+v; want one", c.Rows)
	}
	r := c.Rows[0]
	if r.Op != "all_reduce" || r.Ranks != 4 || r.Bytes != 1_000_000 || r.SizeClass != 1<<20 || r.Count != 1 || r.TimeNs != 1000 {
		t.Errorf("row = %+v", r)
	}
	eqPtrI(t, "P50Ns", r.P50Ns, i64(1000))
	eqPtrI(t, "P99Ns", r.P99Ns, i64(1000))
	eqPtrF(t, "AlgBW", r.AlgBW, f64(1000)) // 10⁶ B / 1000 ns
	eqPtrF(t, "BusBW", r.BusBW, f64(1500)) // × 2(n−1)/n = 1.5
	if c.Open != 0 || c.Incomplete != 0 {
		t.Errorf("open, incomplete = %d, %d; want 0, 0", c.Open, c.Incomplete)
	}
}

func TestCollectiveBusFactors(t *testing.T) {
	tests := []struct {
		op     timeline.CollOp
		ranks  int
		factor float64 // nccl-tests
	}{
		{timeline.CollAllReduce, 2, 1},
		{timeline.CollAllReduce, 8, 1.75},
		{timeline.CollAllGather, 4, 0.75},
		{timeline.CollAllGather, 8, 0.875},
		{timeline.CollReduceScatter, 2, 0.5},
		{timeline.CollAllToAll, 4, 0.75},
		{timeline.CollRaggedAllToAll, 4, 0.75},
		{timeline.CollBroadcast, 4, 1},
		{timeline.CollReduce, 8, 1},
		{timeline.CollSendRecv, 2, 1},
	}
	for _, tc := range tests {
		t.Run(tc.op.String(), func(t *testing.T) {
			starts, ends := make([]int64, tc.ranks), make([]int64, tc.ranks)
			for r := range ends {
				ends[r] = 500
			}
			// Two instances: 4 MB in 500 ns and 4 MB in 1500 ns: algbw = 8 MB / 2000 ns = 4000 GB/s.
			evs := instance(tc.op, 1, starts, ends, 4_000_000)
			for r := range ends {
				starts[r], ends[r] = 1000, 2500
			}
			evs = append(evs, instance(tc.op, 2, starts, ends, 4_000_000)...)
			rows := analyze(timeline.Meta{}, evs...).Collectives.Rows
			if len(rows) != 1 {
				t.Fatalf("rows = %+v; want one", rows)
			}
			r := rows[0]
			if r.Op != tc.op.String() || r.Ranks != tc.ranks || r.Count != 2 || r.TimeNs != 2000 || r.Bytes != 4_000_000 {
				t.Errorf("row = %+v", r)
			}
			eqPtrF(t, "AlgBW", r.AlgBW, f64(4000))
			eqPtrF(t, "BusBW", r.BusBW, f64(4000*tc.factor))
			eqPtrI(t, "P50Ns", r.P50Ns, i64(500))
			eqPtrI(t, "P99Ns", r.P99Ns, i64(1500))
		})
	}
}

func TestCollectiveGrouping(t *testing.T) {
	ar := func(op uint64, dev int32, s, e int64) timeline.Event {
		return collEv(timeline.CollAllReduce, 2, dev, op, s, e, 1000)
	}
	tests := []struct {
		name       string
		evs        []timeline.Event
		rows       int
		count      int64 // instances over all rows
		open       int
		incomplete int64
	}{
		{"interleaved instances", []timeline.Event{ar(1, 0, 0, 10), ar(2, 0, 20, 30), ar(2, 1, 20, 30), ar(1, 1, 0, 10)}, 1, 2, 0, 0},
		{"missing rank stays open", []timeline.Event{ar(1, 0, 0, 10), ar(2, 0, 0, 10), ar(2, 1, 0, 10)}, 1, 1, 1, 0},
		{"failed part is not counted", []timeline.Event{ar(1, 0, 0, 10), withStatus(ar(1, 1, 0, 10), timeline.StatusError)}, 0, 0, 1, 0},
		{"op id 0: each part alone", []timeline.Event{ar(0, 0, 0, 10), ar(0, 1, 0, 30)}, 1, 2, 0, 0},
		{"unknown rank count: complete at once", []timeline.Event{collEv(timeline.CollBroadcast, 0, 0, 5, 0, 10, 8)}, 1, 1, 0, 0},
		{"different sizes: different rows", []timeline.Event{ar(1, 0, 0, 10), ar(1, 1, 0, 10),
			collEv(timeline.CollAllReduce, 2, 0, 2, 0, 10, 5000), collEv(timeline.CollAllReduce, 2, 1, 2, 0, 10, 5000)}, 2, 2, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := analyze(timeline.Meta{}, tc.evs...).Collectives
			var n int64
			for _, r := range c.Rows {
				n += r.Count
			}
			if len(c.Rows) != tc.rows || n != tc.count || c.Open != tc.open || c.Incomplete != tc.incomplete {
				t.Errorf("rows %d, instances %d, open %d, incomplete %d; want %d, %d, %d, %d (%+v)",
					len(c.Rows), n, c.Open, c.Incomplete, tc.rows, tc.count, tc.open, tc.incomplete, c.Rows)
			}
		})
	}
}

func TestCollectiveOpZeroTimes(t *testing.T) {
	// Without an op id each part is an instance of its own: times 10 and 30.
	c := analyze(timeline.Meta{}, collEv(timeline.CollAllReduce, 2, 0, 0, 0, 10, 1000), collEv(timeline.CollAllReduce, 2, 1, 0, 0, 30, 1000)).Collectives
	if len(c.Rows) != 1 || c.Rows[0].Count != 2 || c.Rows[0].TimeNs != 40 {
		t.Errorf("rows = %+v; want one row, 2 instances, 40 ns", c.Rows)
	}
}

func TestCollectiveRaggedMeanBytes(t *testing.T) {
	evs := instance(timeline.CollRaggedAllToAll, 3, []int64{0, 0, 0, 0}, []int64{100, 100, 100, 100}, 100, 200, 300, 400)
	rows := analyze(timeline.Meta{}, evs...).Collectives.Rows
	if len(rows) != 1 {
		t.Fatalf("rows = %+v", rows)
	}
	r := rows[0]
	if r.Op != "ragged_all_to_all" || r.Bytes != 250 || r.SizeClass != 256 {
		t.Errorf("row = %+v; want mean 250 bytes, class 256", r)
	}
	eqPtrF(t, "AlgBW", r.AlgBW, f64(2.5))
	eqPtrF(t, "BusBW", r.BusBW, f64(1.875))
}

func TestCollectiveRowBytesAreMeanPerInstance(t *testing.T) {
	// 1000 B and 1024 B share size class 1024: the row's bytes is the mean, algbw bytes-weighted.
	evs := instance(timeline.CollAllGather, 1, []int64{0, 0}, []int64{100, 100}, 1000)
	evs = append(evs, instance(timeline.CollAllGather, 2, []int64{0, 0}, []int64{300, 300}, 1024)...)
	rows := analyze(timeline.Meta{}, evs...).Collectives.Rows
	if len(rows) != 1 || rows[0].Bytes != 1012 || rows[0].SizeClass != 1024 || rows[0].Count != 2 || rows[0].TimeNs != 400 {
		t.Fatalf("rows = %+v; want one row, mean 1012 B", rows)
	}
	eqPtrF(t, "AlgBW", rows[0].AlgBW, f64(2024.0/400))
	eqPtrF(t, "BusBW", rows[0].BusBW, f64(2024.0/400/2))
}

func TestCollectiveUnknownSize(t *testing.T) {
	evs := instance(timeline.CollAllReduce, 1, []int64{0, 0}, []int64{100, 100}, 0)
	rows := analyze(timeline.Meta{}, evs...).Collectives.Rows
	if len(rows) != 1 || rows[0].AlgBW != nil || rows[0].BusBW != nil || rows[0].Count != 1 {
		t.Errorf("rows = %+v; want one instance, nil bandwidths", rows)
	}
	eqPtrI(t, "P50Ns", rows[0].P50Ns, i64(100))
}

func TestCollectiveSingleRank(t *testing.T) {
	rows := analyze(timeline.Meta{}, collEv(timeline.CollAllReduce, 1, 0, 1, 0, 100, 1000)).Collectives.Rows
	if len(rows) != 1 || rows[0].AlgBW == nil || rows[0].BusBW != nil {
		t.Errorf("rows = %+v; want algbw, no busbw (no bus with one rank)", rows)
	}
}

func TestCollectiveRowOrder(t *testing.T) {
	var evs []timeline.Event
	evs = append(evs, instance(timeline.CollAllReduce, 1, []int64{0, 0, 0, 0}, []int64{9, 9, 9, 9}, 8)...)
	evs = append(evs, instance(timeline.CollAllGather, 2, []int64{0, 0}, []int64{9, 9}, 8)...)
	evs = append(evs, instance(timeline.CollAllReduce, 3, []int64{0, 0}, []int64{9, 9}, 64)...)
	evs = append(evs, instance(timeline.CollAllReduce, 4, []int64{0, 0}, []int64{9, 9}, 8)...)
	rows := analyze(timeline.Meta{}, evs...).Collectives.Rows
	type key struct {
		op    string
		ranks int
		class int64
	}
	want := []key{{"all_gather", 2, 8}, {"all_reduce", 2, 8}, {"all_reduce", 2, 64}, {"all_reduce", 4, 8}}
	if len(rows) != len(want) {
		t.Fatalf("rows = %+v", rows)
	}
	for i, r := range rows {
		if (key{r.Op, r.Ranks, r.SizeClass}) != want[i] {
			t.Errorf("row %d = %v; want %v", i, key{r.Op, r.Ranks, r.SizeClass}, want[i])
		}
	}
}

// Instances that never complete are bounded: past maxOpenInstances the oldest are given up.
func TestCollectiveIncompleteBounded(t *testing.T) {
	const extra = 10
	var evs []timeline.Event
	for op := range uint64(maxOpenInstances + extra) {
		evs = append(evs, collEv(timeline.CollAllReduce, 2, 0, op+1, int64(op), int64(op)+5, 64))
	}
	// The newest open instance still completes.
	evs = append(evs, collEv(timeline.CollAllReduce, 2, 1, maxOpenInstances+extra, 0, maxOpenInstances+extra+10, 64))
	a := fold(timeline.Meta{}, evs)
	c := a.Result(nil).Collectives
	if c.Open != maxOpenInstances-1 || c.Incomplete != extra {
		t.Errorf("open, incomplete = %d, %d; want %d, %d", c.Open, c.Incomplete, maxOpenInstances-1, extra)
	}
	if len(c.Rows) != 1 || c.Rows[0].Count != 1 {
		t.Errorf("rows = %+v; want the one completed instance", c.Rows)
	}
	if n := len(a.colls.open.order); n > 4*maxOpenInstances+1 {
		t.Errorf("order holds %d ids; want it bounded", n)
	}
}

// Many completed instances do not grow the state.
func TestCollectiveStateBounded(t *testing.T) {
	a := New(timeline.Meta{})
	for op := range uint64(10 * maxOpenInstances) {
		for r := range int32(2) {
			e := collEv(timeline.CollAllReduce, 2, r, op+1, int64(op), int64(op)+5, 64)
			a.Emit(&e)
		}
	}
	if a.colls.open.len() != 0 || len(a.colls.open.order) > 4*maxOpenInstances+1 {
		t.Errorf("open %d, order %d after completed instances; want 0 and bounded", a.colls.open.len(), len(a.colls.open.order))
	}
}

// Instances of one size that ran with different algorithms or protocols get a row each, labelled
// as NCCL Inspector labels them, with the most channels any instance used; unknown choices
// (Aux 0) keep an unlabelled row.
func TestCollectiveAlgoProtoRows(t *testing.T) {
	var evs []timeline.Event
	for i, aux := range []uint32{
		timeline.PackNCCL(timeline.AlgoRing, timeline.ProtoLL, 2),
		timeline.PackNCCL(timeline.AlgoRing, timeline.ProtoLL, 4),
		timeline.PackNCCL(timeline.AlgoNVLS, timeline.ProtoSimple, 16),
		0,
	} {
		for _, e := range instance(timeline.CollAllReduce, uint64(i+1), []int64{0, 0}, []int64{1000, 1000}, 4096) {
			e.Aux = aux
			evs = append(evs, e)
		}
	}
	rows := analyze(timeline.Meta{}, evs...).Collectives.Rows
	type got struct {
		label    string
		count    int64
		channels int
	}
	want := []got{{"", 1, 0}, {"NVLS_Simple", 1, 16}, {"Ring_LL", 2, 4}}
	if len(rows) != len(want) {
		t.Fatalf("rows = %+v; want %d", rows, len(want))
	}
	for i, w := range want {
		ch := 0
		if rows[i].Channels != nil {
			ch = *rows[i].Channels
		}
		if g := (got{rows[i].AlgoProto, rows[i].Count, ch}); g != w {
			t.Errorf("row %d = %+v; want %+v", i, g, w)
		}
	}
}

// Which rank arrived last at each collective, worked by hand: three ranks, five instances.
//
//	instance  starts (rank 0, 1, 2)  last    median  lateness
//	1         100, 130, 400          rank 2  130     270
//	2         1000, 1500, 1010       rank 1  1010    490
//	3         2060, 2000, 2030       rank 0  2030    30
//	4         3000, 3005, 3200       rank 2  3005    195
//	5         4000, 4100, 4100       none            (a tie for last: nobody waited for one rank)
//	6         5000, 5000, 5000       none            (all together)
//
// Rank 2 was last twice (lateness p50, nearest rank, of {270, 195}: 195), ranks 0 and 1 once (30,
// 490); most often first, then by rank. The instance of one rank has no straggler.
func TestCollectiveStragglers(t *testing.T) {
	starts := [][]int64{{100, 130, 400}, {1000, 1500, 1010}, {2060, 2000, 2030}, {3000, 3005, 3200}, {4000, 4100, 4100}, {5000, 5000, 5000}}
	var evs []timeline.Event
	for i, s := range starts {
		ends := []int64{s[0] + 1000, s[1] + 1000, s[2] + 1000}
		inst := instance(timeline.CollAllReduce, uint64(i+1), s, ends, 4096)
		if i == 4 {
			inst[1], inst[2] = inst[2], inst[1] // rank 2's part comes first
		}
		evs = append(evs, inst...)
	}
	evs = append(evs, collEv(timeline.CollBroadcast, 1, 0, 99, 6000, 6100, 64))
	got := analyze(timeline.Meta{}, evs...).Collectives.Stragglers
	if len(got) != 3 {
		t.Fatalf("stragglers %+v; want ranks 2, 0, 1", got)
	}
	for i, w := range []struct {
		rank     int32
		times    int64
		lateness int64
	}{{2, 2, 195}, {0, 1, 30}, {1, 1, 490}} {
		g := got[i]
		if g.Rank != w.rank || g.TimesLast != w.times || g.LatenessNs50 == nil || *g.LatenessNs50 != w.lateness {
			t.Errorf("stragglers[%d] = {rank %d, times %d, p50 %s}; want {rank %d, times %d, p50 %d}",
				i, g.Rank, g.TimesLast, fmtPtrI(g.LatenessNs50), w.rank, w.times, w.lateness)
		}
	}
}

// An instance some rank never reported by the stream's end (one file of a two-rank Inspector log)
// is counted unreported, with those given up past the bound; one begun before the analysis starts
// (a replay from T) is not: its other ranks' parts may have ended before T, unseen.
func TestCollectiveUnreportedAtEnd(t *testing.T) {
	twoRanks := instance(timeline.CollAllReduce, 1, []int64{100, 110}, []int64{500, 510}, 1<<20)
	tests := []struct {
		name       string
		from       int64
		evs        []timeline.Event
		rows, open int
		unreported int64
	}{
		{"every rank reported", 0, twoRanks, 1, 0, 0},
		{"rank 1 never reported", 0, twoRanks[:1], 0, 1, 1},
		{"two instances, one rank each", 0, []timeline.Event{collEv(timeline.CollAllGather, 2, 0, 2, 100, 200, 64),
			collEv(timeline.CollAllGather, 2, 1, 3, 300, 400, 64)}, 0, 2, 2},
		{"rank 0's part ended before the start", 505, twoRanks[1:], 0, 1, 0},
		{"begun after the start, rank 1 missing", 50, twoRanks[:1], 0, 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := New(timeline.Meta{})
			a.StartAt(tc.from)
			for i := range tc.evs {
				a.Emit(&tc.evs[i])
			}
			c := a.Result(timeline.NewStrings()).Collectives
			if len(c.Rows) != tc.rows || c.Open != tc.open || c.Unreported() != tc.unreported {
				t.Errorf("rows, open, Unreported() = %d, %d, %d; want %d, %d, %d", len(c.Rows), c.Open, c.Unreported(), tc.rows, tc.open, tc.unreported)
			}
		})
	}
}

// An instance's straggler and its lateness do not depend on the order its ranks' parts arrive in:
// every order of four ranks' parts, one rank last alone, two tied for last, or all together,
// names the same ranks with the same lateness.
func TestCollectiveStragglerOrderFree(t *testing.T) {
	starts := [][]int64{{100, 400, 130, 120}, {100, 400, 400, 120}, {100, 100, 100, 100}, {90, 100, 110, 150}}
	var want []Straggler
	for p := range 24 {
		order := []int{0, 1, 2, 3}
		for i, k := 0, p; i < 4; i, k = i+1, k/(4-i) { // the p-th permutation
			j := i + k%(4-i)
			order[i], order[j] = order[j], order[i]
		}
		var evs []timeline.Event
		for n, s := range starts {
			inst := instance(timeline.CollAllReduce, uint64(n+1), s, []int64{1000, 1000, 1000, 1000}, 64)
			for _, r := range order {
				evs = append(evs, inst[r])
			}
		}
		got := analyze(timeline.Meta{}, evs...).Collectives.Stragglers
		if p == 0 {
			want = got
			if len(want) != 2 || want[0].Rank != 1 || want[1].Rank != 3 {
				t.Fatalf("stragglers %+v; want ranks 1 and 3", want)
			}
			continue
		}
		if len(got) != len(want) {
			t.Fatalf("order %v: stragglers %+v; want %+v", order, got, want)
		}
		for i := range got {
			if got[i].Rank != want[i].Rank || got[i].TimesLast != want[i].TimesLast || *got[i].LatenessNs50 != *want[i].LatenessNs50 {
				t.Errorf("order %v: straggler %d = %+v; want %+v", order, i, got[i], want[i])
			}
		}
	}
}

// The instances some rank never reported (an NCCL Inspector log of some ranks only, a job killed
// mid-collective, a Flight Recorder dump missing) are rows too, with the fewest and most ranks
// seen of those expected, and the figures of the ranks seen: size, count, time (last end − first
// start of those ranks) and bandwidths. The given-up ones (past the bound on open instances) are
// among them, and the rows count exactly the instances Unreported counts.
func TestCollectivePartialRows(t *testing.T) {
	var evs []timeline.Event
	// A complete 2-rank all_gather, and a 2-rank all_reduce of which rank 1 never reported.
	evs = append(evs, instance(timeline.CollAllGather, 1, []int64{0, 0}, []int64{100, 100}, 1<<20)...)
	evs = append(evs, collEv(timeline.CollAllReduce, 2, 0, 2, 200, 300, 1<<30))
	// Two 4-rank reduce_scatters of 4 KiB: three ranks of one reported (400–500, rank 2 from 450
	// to 520: 120 ns), two of the other (600–700: 100 ns).
	for r := range int32(3) {
		s, e := int64(400), int64(500)
		if r == 2 {
			s, e = 450, 520
		}
		evs = append(evs, collEv(timeline.CollReduceScatter, 4, r, 3, s, e, 4096))
	}
	for r := range int32(2) {
		evs = append(evs, collEv(timeline.CollReduceScatter, 4, r, 4, 600, 700, 4096))
	}
	c := analyze(timeline.Meta{}, evs...).Collectives
	if len(c.Rows) != 1 || c.Rows[0].Op != "all_gather" || c.Rows[0].RanksSeen != nil {
		t.Errorf("complete rows = %+v; want the all_gather alone", c.Rows)
	}
	want := []struct {
		op             string
		ranks          int
		bytes, n       int64
		fewest, most   int
		timeNs, p99    int64
		algbw, busbw   float64 // GB/s = bytes per ns
		straggler      int32
		stragglerTimes int64
	}{
		// 1 GiB in 100 ns; all_reduce's bus factor over 2 ranks is 2·1/2 = 1.
		{"all_reduce", 2, 1 << 30, 1, 1, 1, 100, 100, float64(1<<30) / 100, float64(1<<30) / 100, -1, 0},
		// 2 × 4096 B in 120 + 100 ns; reduce_scatter's bus factor over 4 ranks is 3/4. Rank 2
		// started 50 ns after the median of the first: the straggler of the ranks seen.
		{"reduce_scatter", 4, 4096, 2, 2, 3, 220, 120, 8192.0 / 220, 8192.0 / 220 * 3 / 4, 2, 1},
	}
	if len(c.Partial) != len(want) {
		t.Fatalf("partial rows = %+v; want %d", c.Partial, len(want))
	}
	if len(c.Stragglers) != 1 || c.Stragglers[0].Rank != 2 || c.Stragglers[0].TimesLast != 1 || c.Stragglers[0].TimesLastPartial != 1 ||
		c.Stragglers[0].LatenessNs50 == nil || *c.Stragglers[0].LatenessNs50 != 50 {
		t.Errorf("stragglers = %+v; want rank 2, once, at a partial instance, 50 ns late", c.Stragglers)
	}
	for i, w := range want {
		p := c.Partial[i]
		if p.TimeNs != w.timeNs || p.P99Ns == nil || *p.P99Ns != w.p99 {
			t.Errorf("partial row %d: time %d ns, p99 %v; want %d ns, p99 %d ns (of the ranks seen)", i, p.TimeNs, p.P99Ns, w.timeNs, w.p99)
		}
		if p.AlgBW == nil || p.BusBW == nil || math.Abs(*p.AlgBW-w.algbw) > 0.001*w.algbw || math.Abs(*p.BusBW-w.busbw) > 0.001*w.busbw {
			t.Errorf("partial row %d: algbw %v, busbw %v; want %.4g, %.4g GB/s", i, p.AlgBW, p.BusBW, w.algbw, w.busbw)
		}
	}
	var n int64
	for i, w := range want {
		p := c.Partial[i]
		if p.Op != w.op || p.Ranks != w.ranks || p.Bytes != w.bytes || p.Count != w.n || p.RanksSeen == nil || *p.RanksSeen != [2]int{w.fewest, w.most} {
			t.Errorf("partial row %d = %+v (seen %v); want %s of %d ranks, %d B, %d instances, %d–%d ranks seen", i, p, p.RanksSeen, w.op, w.ranks, w.bytes, w.n, w.fewest, w.most)
		}
		n += p.Count
	}
	if n != c.Unreported() {
		t.Errorf("partial rows count %d instances; Unreported says %d", n, c.Unreported())
	}
	// Given up past the bound: still rows.
	evs = evs[:0]
	for op := range uint64(maxOpenInstances + 10) {
		evs = append(evs, collEv(timeline.CollAllReduce, 2, 0, op+1, int64(op), int64(op)+5, 64))
	}
	c = analyze(timeline.Meta{}, evs...).Collectives
	if c.Incomplete != 10 || len(c.Partial) != 1 || c.Partial[0].Count != maxOpenInstances+10 || c.Partial[0].Count != c.Unreported() {
		t.Errorf("given up %d, partial %+v; want one row of all %d instances", c.Incomplete, c.Partial, maxOpenInstances+10)
	}
}

// A partial row's JSON writes its time (of the ranks seen) and the ranks seen; a complete row's
// ranks_seen is null (the key is always there); ranks_unrecorded is a list, empty when none.
func TestCollectivePartialJSON(t *testing.T) {
	p := Collective{Op: "all_reduce", Ranks: 4, SizeClass: 1 << 30, Bytes: 1 << 30, Count: 1, TimeNs: 7, RanksSeen: &[2]int{3, 3},
		Unrecorded: []int32{3}, UnrecordedCount: 1}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"time_ns_total":7`, `"ranks_seen":[3,3]`, `"busbw_gbps":null`, `"ranks_unrecorded":[3]`, `"ranks_unrecorded_count":1`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("partial row JSON %s lacks %s", b, want)
		}
	}
	b, _ = json.Marshal(Collective{Op: "all_reduce", Ranks: 2, Count: 1, TimeNs: 5})
	for _, want := range []string{`"time_ns_total":5`, `"ranks_seen":null`, `"ranks_unrecorded":[]`, `"ranks_unrecorded_count":0`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("complete row JSON %s lacks %s", b, want)
		}
	}
}

// A rank that left no record (a membership mark with StatusNoRecord: its Flight Recorder dump
// missing) is named by the partial rows of its communicator's collectives, not by another
// communicator's; the stragglers of the ranks seen are counted, as at partial instances.
func TestCollectivePartialNamesUnrecorded(t *testing.T) {
	const world, pair = 1, 2
	seqEv := func(comm uint32, ranks int, dev int32, seq uint64, start, end int64) timeline.Event {
		e := collEv(timeline.CollAllReduce, ranks, dev, timeline.SeqOp(comm, seq), start, end, 1<<20)
		e.Comm, e.Aux = comm, timeline.AuxSeqOp
		return e
	}
	// Rank 3 of the 4-rank world left no dump; ranks 0–2 ran three all_reduces, rank 2 starting
	// 30 ns after the others each time. Ranks 0 and 1 also ran a complete 2-rank all_reduce of
	// 4 MiB on their pair.
	evs := []timeline.Event{{Kind: timeline.KindMark, Device: timeline.NoDevice, Peer: 3, Comm: world, Ranks: 4,
		Op: timeline.SeqOp(world, 0), Aux: timeline.AuxSeqOp, Status: timeline.StatusNoRecord}}
	for seq := uint64(1); seq <= 3; seq++ {
		at := int64(seq) * 1000
		for r := range int32(3) {
			s := at
			if r == 2 {
				s += 30
			}
			evs = append(evs, seqEv(world, 4, r, seq, s, at+500))
		}
	}
	for r := range int32(2) {
		e := seqEv(pair, 2, r, 1, 5000, 5100)
		e.Bytes = 4 << 20
		evs = append(evs, e)
	}
	c := analyze(timeline.Meta{}, evs...).Collectives
	if len(c.Partial) != 1 {
		t.Fatalf("partial rows = %+v; want the world's all_reduce", c.Partial)
	}
	p := c.Partial[0]
	if p.Ranks != 4 || *p.RanksSeen != [2]int{3, 3} || p.Count != 3 || p.TimeNs != 1500 || !slices.Equal(p.Unrecorded, []int32{3}) || p.UnrecordedCount != 1 {
		t.Errorf("partial row = %+v (seen %v); want 3 of 4 ranks seen, 3 instances of 500 ns, rank 3 unrecorded", p, p.RanksSeen)
	}
	if len(c.Rows) != 1 || c.Rows[0].Ranks != 2 {
		t.Errorf("complete rows = %+v; want the pair's all_reduce", c.Rows)
	}
	if len(c.Stragglers) != 1 || c.Stragglers[0].Rank != 2 || c.Stragglers[0].TimesLast != 3 || c.Stragglers[0].TimesLastPartial != 3 {
		t.Errorf("stragglers = %+v; want rank 2, last 3 times, all at partial instances", c.Stragglers)
	}
	// The stragglers of the open instances are an overlay: a later result, after the instances
	// completed, counts them once, as complete.
	a := fold(timeline.Meta{}, evs)
	_ = a.Result(timeline.NewStrings())
	for seq := uint64(1); seq <= 3; seq++ {
		e := seqEv(world, 4, 3, seq, int64(seq)*1000+60, int64(seq)*1000+500)
		a.Emit(&e)
	}
	c = a.Result(timeline.NewStrings()).Collectives
	if len(c.Partial) != 0 || len(c.Stragglers) != 1 || c.Stragglers[0].Rank != 3 || c.Stragglers[0].TimesLast != 3 || c.Stragglers[0].TimesLastPartial != 0 {
		t.Errorf("after rank 3 reported: partial %+v, stragglers %+v; want none partial, rank 3 last 3 times", c.Partial, c.Stragglers)
	}
}
