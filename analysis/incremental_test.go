package analysis

import (
	"cmp"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// clusterFolds is a console's view of a 4,096-GPU job behind a Collector: fold after fold, the
// spans of a few hosts (64 GPUs each) arrive, the same hosts again now and then, new ones until all
// have sent. Each device runs kernels on one stream (launched late now and then, after an event
// wait now and then) and sends and all-reduces on another, overlapping its kernels. It returns the
// events and the index where each fold's events end; a fold may bring nothing.
func clusterFolds(seed uint64, folds int) ([]timeline.Event, []int) {
	const hosts, gpus = 64, 64
	r := rand.New(rand.NewPCG(seed, 3))
	var evs []timeline.Event
	var ends []int
	seen := 0 // hosts that sent: the first ones come fold by fold
	var op uint64
	for f := range folds {
		base := int64(f) * 2_000 * us
		var batch []timeline.Event
		if f%9 != 4 { // every ninth fold nothing arrives
			picked := map[int]bool{}
			for range 1 + r.IntN(4) {
				if seen < hosts {
					picked[seen] = true
					seen++
				}
			}
			for range r.IntN(4) {
				picked[r.IntN(min(seen, hosts))] = true
			}
			for h := range picked {
				for g := range gpus {
					d := int32(h*gpus + g)
					batch = append(batch, deviceOps(r, d, base, &op)...)
				}
			}
		}
		slices.SortStableFunc(batch, func(a, b timeline.Event) int { return cmp.Compare(a.End, b.End) })
		evs = append(evs, batch...)
		ends = append(ends, len(evs))
	}
	return evs, ends
}

// deviceOps is a device's ops of one fold starting at base: kernels on stream 1 (an event wait
// before one, a late launch before another), a send and now and then an all-reduce on stream 2.
func deviceOps(r *rand.Rand, d int32, base int64, op *uint64) []timeline.Event {
	var out []timeline.Event
	t := base + r.Int64N(50*us)
	if r.IntN(3) == 0 {
		out = append(out, waitEv(timeline.KindEventWait, d, 1, t, t+r.Int64N(40*us)+1))
	}
	for k := range 3 + r.IntN(4) {
		gap := r.Int64N(60 * us)
		e := kern(d, 1, t+gap, t+gap+10*us+r.Int64N(200*us))
		e.Queued = t + r.Int64N(gap+1)
		if k == 2 && r.IntN(2) == 0 {
			e.Queued = e.Start - us // the host launched it late
		}
		out = append(out, e)
		t = e.End
	}
	*op++
	s := base + r.Int64N(300*us)
	snd := sendEv(d, d^1, s, s+20*us+r.Int64N(100*us), 1<<20, *op)
	snd.Stream = 2
	out = append(out, snd)
	if r.IntN(2) == 0 {
		s = snd.End + r.Int64N(20*us)
		ar := collEv(timeline.CollAllReduce, 2, d, *op, s, s+50*us+r.Int64N(100*us), 4<<20)
		ar.Stream = 2
		out = append(out, ar)
	}
	return out
}

// A result built from the rows kept since the last one (only the devices and streams that ran an
// op since rebuilt) equals one built from scratch: at 4,096 devices, after every fold of a
// sequence where each fold touches a few hosts' devices, new ones among them, and some folds none,
// every result equals a fresh analyzer's over the same events, and reads the same at the end as
// when it was made (no frame shows stale numbers, and no later fold writes a row handed out).
func TestIncrementalResultEqualsFresh4096(t *testing.T) {
	strs := timeline.NewStrings()
	m := timeline.Meta{Source: "cluster", Devices: 4096, GPUsPerHost: 64}
	evs, ends := clusterFolds(5, 60)
	a := New(m)
	var results []*Result
	var digests []string
	lo := 0
	for f, hi := range ends {
		for i := lo; i < hi; i++ {
			a.Emit(&evs[i])
		}
		lo = hi
		got := a.Result(strs)
		if want := fold(m, evs[:hi]).Result(strs); !reflect.DeepEqual(got, want) {
			t.Fatalf("fold %d (%d events): the result kept row by row differs from a fresh one in %v", f, hi, diffFields(got, want))
		}
		results, digests = append(results, got), append(digests, digest(t, got))
	}
	if n := len(results[len(results)-1].Breakdown.Devices); n != 4096 {
		t.Fatalf("the folds reached %d devices; want 4096", n)
	}
	for f, r := range results {
		if digest(t, r) != digests[f] {
			t.Fatalf("the result of fold %d reads otherwise after later folds", f)
		}
	}
}

// BenchmarkResultCollectorFold is a console's frame behind a Collector at 4,096 devices, all of
// which have run: the fold of a few hosts' spans (not timed) and the Result after it. ns/op and
// allocs/op are one Result's.
//
// Run with: go test ./analysis -run '^$' -bench ResultCollectorFold -count 6
func BenchmarkResultCollectorFold(b *testing.B) {
	strs := timeline.NewStrings()
	m := timeline.Meta{Source: "cluster", Devices: 4096, GPUsPerHost: 64}
	evs, ends := clusterFolds(5, 400)
	start := ends[59] // every host has sent by then
	a := fold(m, evs[:start])
	a.Result(strs)
	f := 60
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		if f == len(ends) {
			a, f = fold(m, evs[:start]), 60
			a.Result(strs)
		}
		for i := ends[f-1]; i < ends[f]; i++ {
			a.Emit(&evs[i])
		}
		f++
		b.StartTimer()
		_ = a.Result(strs)
	}
}
