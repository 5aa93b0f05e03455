package steps

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/xfertop/xfertop/timeline"
)

// Op is one GPU op of a device stream, for the search for a repeating sequence.
type Op struct {
	Start, End int64
	Sym        uint32 // the op's name: equal for ops of one kind, collective op and label
	Device     int32
	Stream     uint32
	Host       uint16
	Coll       Coll
}

// Coll says whether an op is a collective, and whether it reduces (all-reduce, reduce-scatter:
// the gradients' collectives, which a training step runs once per step).
type Coll uint8

// The kinds of op the search tells apart.
const (
	NotColl Coll = iota
	Collective
	Reducing
)

const (
	// minMatch is the share of the ops of the periods kept that must equal the op one period later for the
	// period to be a repeat: a step's kernel sequence repeats exactly but for the odd autotuned or
	// data-dependent kernel.
	minMatch = 0.9
	// minCover is the share of the stream's ops the whole periods must hold: steps are what the
	// trace is made of, not a stretch of it.
	minCover = 0.5
	// maxSamples bounds the positions a period is checked at, so a long trace costs the same.
	maxSamples = 1 << 16
	// maxCandidates bounds the periods checked.
	maxCandidates = 512
)

// InferSequence finds the iterations of a trace that marks none from its GPU ops: the sequence of
// op names on the busiest device stream is searched for a period that repeats at least twice.
// Candidate periods are the distances between successive occurrences of each name; a period is a
// repeat when at least minMatch of the ops equal the op one period later. A layer repeats too, so
// among the repeats the longest is taken that is not a multiple of a shorter one (a step holds its
// layers; two steps are a multiple of one), whose whole periods hold at least minCover of the
// stream's ops, and, when the device runs collectives, each of whose periods holds a reducing one
// (the gradients' all-reduce or reduce-scatter). Each step starts at
// the same op of the period: the one after the longest idle gaps of the stream.
//
// When it finds none, Found.How says why.
func InferSequence(ops []Op) (Found, bool) {
	seq := busiest(ops)
	n := len(seq)
	if n < 4 {
		return Found{How: "no sequence of GPU ops repeats twice"}, false
	}
	colls, need := collectives(ops, seq[0].Device)
	type cand struct {
		p     int
		match float64
		phase int
		steps []timeline.Interval
	}
	var good []cand
	var layers *cand // the longest repeat turned down for want of a reducing collective
	for _, p := range candidates(seq) {
		if match(seq, p) < minMatch/2 { // a first sieve: a warm-up step may be unlike the rest
			continue
		}
		phase := bestPhase(seq, p)
		k := (n - phase) / p
		if k < 2 || float64(k*p) < minCover*float64(n) {
			continue
		}
		phase, k = trim(seq, p, phase, k)
		if k < 2 || float64(k*p) < minCover*float64(n) {
			continue
		}
		m := match(seq[phase:phase+k*p], p)
		st := periods(seq, p, phase, k)
		if m < minMatch {
			continue
		}
		if !eachHolds(st, colls, need) {
			if layers == nil || p > layers.p {
				layers = &cand{p, m, phase, st}
			}
			continue
		}
		good = append(good, cand{p, m, phase, st})
	}
	var best *cand
	for i := range good {
		c := &good[i]
		multiple := false
		for _, d := range good {
			if d.p < c.p && c.p%d.p == 0 && d.match >= c.match-0.02 {
				multiple = true
				break
			}
		}
		if !multiple && (best == nil || c.p > best.p) {
			best = c
		}
	}
	first := seq[0]
	if best == nil {
		if layers != nil {
			return Found{How: fmt.Sprintf("the GPU ops repeat a sequence of %d ops %d× on device %d's stream %d, but the device runs collectives and not every repeat holds an all-reduce or reduce-scatter (a step reduces its gradients; a layer need not): taken for layers, not steps",
				layers.p, len(layers.steps), first.Device, first.Stream)}, false
		}
		return Found{How: "no sequence of GPU ops repeats twice"}, false
	}
	return Found{
		Steps: best.steps,
		Host:  first.Host,
		How: fmt.Sprintf("inferred from a kernel sequence of %d ops repeating %d× on device %d's stream %d (%.0f%% of the %d ops in them match the op one period later)",
			best.p, len(best.steps), first.Device, first.Stream, 100*best.match, best.p*len(best.steps)),
	}, true
}

// busiest is the ops of the stream with the most, in start order.
func busiest(ops []Op) []Op {
	type key struct {
		dev    int32
		stream uint32
	}
	count := map[key]int{}
	var top key
	for _, o := range ops {
		k := key{o.Device, o.Stream}
		count[k]++
		c, ct := count[k], count[top]
		if c > ct || (c == ct && (k.dev < top.dev || (k.dev == top.dev && k.stream < top.stream))) {
			top = k
		}
	}
	seq := make([]Op, 0, count[top])
	for _, o := range ops {
		if o.Device == top.dev && o.Stream == top.stream {
			seq = append(seq, o)
		}
	}
	slices.SortStableFunc(seq, func(a, b Op) int { return cmp.Compare(a.Start, b.Start) })
	return seq
}

// collectives is the start times of the device's reducing collectives, which each period must hold
// when the device runs collectives at all (need). A training step reduces its gradients once
// (all-reduce, reduce-scatter); a layer gathers its weights or exchanges activations, and a
// capture of a forward pass repeats its layers as regularly as steps repeat. A collective whose op
// is not known (an imported SendRecv kernel) does not count as reducing: a trace whose collectives
// are all such finds no step by its sequence.
func collectives(ops []Op, dev int32) (starts []int64, need bool) {
	for _, o := range ops {
		if o.Device != dev || o.Coll == NotColl {
			continue
		}
		need = true
		if o.Coll == Reducing {
			starts = append(starts, o.Start)
		}
	}
	slices.Sort(starts)
	return starts, need
}

// candidates is the periods worth checking: for each name, the distance between its successive
// occurrences that occurs most often, the periods voted for by the most ops first.
func candidates(seq []Op) []int {
	last := map[uint32]int{}
	gaps := map[uint32]map[int]int{}
	for i, o := range seq {
		if j, ok := last[o.Sym]; ok {
			g := gaps[o.Sym]
			if g == nil {
				g = map[int]int{}
				gaps[o.Sym] = g
			}
			g[i-j]++
		}
		last[o.Sym] = i
	}
	votes := map[int]int{}
	for _, g := range gaps {
		mode, most := 0, 0
		for d, c := range g {
			if c > most || (c == most && d < mode) {
				mode, most = d, c
			}
		}
		votes[mode] += most
	}
	ps := make([]int, 0, len(votes))
	for p := range votes {
		if p <= len(seq)/2 {
			ps = append(ps, p)
		}
	}
	slices.SortFunc(ps, func(a, b int) int { return cmp.Or(cmp.Compare(votes[b], votes[a]), cmp.Compare(a, b)) })
	if len(ps) > maxCandidates {
		ps = ps[:maxCandidates]
	}
	return ps
}

// match is the share of the ops (at most maxSamples of them, evenly spread) whose name equals that
// of the op one period p later.
func match(seq []Op, p int) float64 {
	m := len(seq) - p
	if m <= 0 {
		return 0
	}
	stride := max(1, m/maxSamples)
	same, all := 0, 0
	for i := 0; i < m; i += stride {
		all++
		if seq[i].Sym == seq[i+p].Sym {
			same++
		}
	}
	return float64(same) / float64(all)
}

// bestPhase is the op of the period each step starts at: the one whose occurrences follow the most
// idle time on the stream (steps are parted by the host's work between them: data loading, the
// optimizer's launches, a synchronisation). The first op of the stream has no gap before it.
func bestPhase(seq []Op, p int) int {
	idle := make([]int64, p)
	for i := 1; i < len(seq); i++ {
		if g := seq[i].Start - seq[i-1].End; g > 0 {
			idle[i%p] += g
		}
	}
	best := 0
	for ph := 1; ph < p; ph++ {
		if idle[ph] > idle[best] {
			best = ph
		}
	}
	return best
}

// trim leaves out the whole periods at either end unlike their neighbour (a warm-up step that
// autotuned, a last step cut short), and returns the phase and count of those left.
func trim(seq []Op, p, phase, k int) (int, int) {
	like := func(a, b int) bool { // periods a and b, by index
		same := 0
		for i := range p {
			if seq[phase+a*p+i].Sym == seq[phase+b*p+i].Sym {
				same++
			}
		}
		return float64(same) >= minMatch*float64(p)
	}
	for k >= 2 && !like(0, 1) {
		phase, k = phase+p, k-1
	}
	for k >= 2 && !like(k-1, k-2) {
		k--
	}
	return phase, k
}

// periods is the k steps of period p from phase: each from its first op's start to the next
// step's, the last to the end of its ops (or the next op's start, when there is one).
func periods(seq []Op, p, phase, k int) []timeline.Interval {
	st := make([]timeline.Interval, k)
	for s := range k {
		a, b := phase+s*p, phase+(s+1)*p
		end := seq[a].End
		if b < len(seq) {
			end = seq[b].Start
		} else {
			for _, o := range seq[a:b] {
				end = max(end, o.End)
			}
		}
		st[s] = timeline.Interval{Start: seq[a].Start, End: end}
	}
	return st
}

// eachHolds reports whether every step holds one of the sorted starts, or need is false.
func eachHolds(st []timeline.Interval, starts []int64, need bool) bool {
	if !need {
		return true
	}
	for _, iv := range st {
		i, _ := slices.BinarySearch(starts, iv.Start)
		if i == len(starts) || starts[i] >= iv.End {
			return false
		}
	}
	return true
}
