package diagnosis

import (
	"fmt"
	"math"
	"slices"

	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/units"
)

// suspect is one rank's standing in a step for one kind of fault.
type suspect struct {
	kind   Kind
	rank   int32
	host   int32   // the culprit's host (slow links: also when the rank is not known)
	ratio  float64 // how much worse than its peers (1: as its peers)
	excess int64   // ns the step lost to it
	link   int
	port   uint32  // a switch port's leaf + 1 (link timeline.LinkFabric); 0: none
	conf   float64 // how far it stands from the next suspect, (0, 1]
	detail string
	// confined: only some of the rank's kernels were slow, others ran at their peers' speed. A
	// throttled GPU slows all its kernels (from the onset on); uneven work under one kernel name
	// (a mixture of experts' hot expert) slows one. Such a suspect needs a second step in a row.
	confined bool
	// evidence is the start + 1 of the first evidence of it in the step (its first slow kernel, the
	// first window its link was slow in); 0: not known, the start of its first op in the step.
	evidence int64
	// peer is what the suspect's figure is compared with, where the detail says it after.
	peer float64
	// flaps: a slow link down in some windows and up at its peers' rate between.
	flaps bool
	// ties identifies the ranks tied for a slow link whose rank is not known (tieKey; 0 for a
	// named culprit): such a suspect holds over steps only while the same ranks tie. Different
	// transfers a little slow in each step (a healthy job's contention, here one pipeline pair,
	// there another) are not one link slow in both.
	ties uint64
	// hidden: a degraded link named by its rate against its reference, not by what the step lost
	// (hiddenlink.go); exposure is what it would cost the step were nothing overlapping it.
	hidden   bool
	exposure int64
	// explained is the step's growth a slow GPU named in the same step accounts for (its kernels'
	// lost time): a link's transfers cost the step at most the growth left beside it.
	explained int64
	// cost names what excess measures ("its transfers", "its launches", "its kernels"): the
	// finding says what the step lost to it beside it (costPhrase); "": the detail says it.
	cost string
}

// endStep evaluates the step that a step event closes and starts the next.
func (d *Diagnosis) endStep(e *timeline.Event) {
	if e.Status != timeline.StatusOK {
		// A step cut short (a hang, a deadlock, a cancellation): its ranks did not all do their
		// work, so they are not compared.
		d.reset(e.End)
		return
	}
	d.nSteps++
	d.step = int(e.Aux)
	if d.win.end <= e.End {
		d.flushWindow() // the windows the step covers are all in
	}
	stepNs := max(e.End-e.Start, 1)
	work, clean := d.stepWork(e)
	growth := int64(-1) // unknown: no step before
	if d.workBase > 0 {
		growth = max(work-d.workBase, 0)
	}
	var sus []suspect
	if s, ok := d.slowGPU(); ok {
		sus = append(sus, s)
	} else if s, ok := d.selfSlowGPU(growth); ok {
		sus = append(sus, s)
	}
	// A throttled GPU's kernels lost time the step grew by: the growth left beside it is all a
	// link without peers can have cost the step (its transfers may have waited alongside).
	var gpuLost int64
	if len(sus) > 0 {
		gpuLost = max(sus[0].excess, 0)
	}
	linkGrowth := d.steadyGrowth(work)
	if linkGrowth > 0 {
		linkGrowth = max(linkGrowth-gpuLost, 0)
	}
	if s, ok := d.slowLink(); ok && !has(sus, s.rank) {
		sus = append(sus, s)
	} else if s, ok := d.selfSlowLink(linkGrowth); ok && !has(sus, s.rank) {
		s.explained = gpuLost
		sus = append(sus, s)
	} else if s, ok := d.allToAllLink(); ok && !has(sus, s.rank) {
		sus = append(sus, s)
	} else if s, ok := d.hiddenLink(); ok && !has(sus, s.rank) {
		s.explained = gpuLost
		sus = append(sus, s)
	}
	if s, ok := d.slowHost(); ok && !has(sus, s.rank) {
		sus = append(sus, s)
	} else if !ok {
		if s, ok := d.slowWholeHost(); ok && !onHost(sus, s.host) {
			sus = append(sus, s)
		}
	}
	if s, ok := d.straggler(stepNs); ok && !has(sus, s.rank) {
		sus = append(sus, s)
	}
	if d.shared {
		sus = nil // ranks on shared GPUs: their differences are the sharing's (Diagnosis.shared)
	}
	seen := map[candKey]bool{}
	for _, s := range sus {
		k := candKey{kind: s.kind, rank: s.rank, port: s.port, ties: s.ties}
		if s.rank < 0 && s.kind == SlowHost {
			k.host = s.host
		}
		seen[k] = true
		c := d.cand[k]
		if c == nil {
			c = &candidate{onset: d.onset(s, e.Start), base: d.steadyBase, bound: d.workBase}
			// Seen in the first step compared, at the culprit's first op (within a link window,
			// the granularity of a link's evidence): no evidence could come earlier.
			c.first = d.nSteps == 1 && c.onset <= d.firstOp(s, e.Start)+timeline.LinkWindowNs
			d.cand[k] = c
		}
		c.steps++
		if c.steps >= 2 || (s.ratio >= strong && !s.confined) {
			d.report(k, c, s, e, work)
		}
	}
	for k := range d.cand {
		if !seen[k] {
			delete(d.cand, k)
		}
	}
	d.endSelf()
	d.endSelfLink()
	if d.workBase == 0 || work < d.workBase {
		d.workBase = work
	}
	if clean && (d.steadyBase == 0 || work < d.steadyBase) {
		d.steadyBase = work
	}
	d.reset(e.End)
}

// steadyGrowth is how much longer the step's work was than the shortest clean step's (negative:
// none known). A first step whose setup ops ran between (a pipeline filling while its last stage
// still joins) has its work counted from the end of the communicators' creation, shorter than a
// whole step (stepWork): a step compared with it would seem to have grown.
func (d *Diagnosis) steadyGrowth(work int64) int64 {
	if d.steadyBase == 0 {
		return -1
	}
	return max(work-d.steadyBase, 0)
}

// onHost reports whether a suspect already names a rank of host h (or the host).
func onHost(sus []suspect, h int32) bool {
	for _, s := range sus {
		if s.host == h {
			return true
		}
	}
	return false
}

// onset is a new suspect's onset: its first evidence in the step when known, else the start of
// its first op (firstOp); never before the step's start.
func (d *Diagnosis) onset(s suspect, stepStart int64) int64 {
	if s.evidence > 0 {
		return max(s.evidence-1, stepStart)
	}
	return d.firstOp(s, stepStart)
}

// firstOp is a new suspect's onset: the start of the first op its rank (or, for a whole host,
// any of its host's ranks) ran in the step, not the step's start, which can be long before the
// fault (a step that began with the communicators' creation); the step's start when unknown.
func (d *Diagnosis) firstOp(s suspect, stepStart int64) int64 {
	lo, hi := s.rank, s.rank
	if s.rank < 0 {
		if s.kind != SlowHost || s.host < 0 {
			return stepStart
		}
		lo, hi = 0, int32(len(d.ranks))-1 // the host's ranks, as the host map places them
	}
	at, ok := int64(0), false
	for r := lo; r <= hi && int(r) < len(d.ranks); r++ {
		if s.rank < 0 && d.hostOf(r) != s.host {
			continue
		}
		if a := &d.ranks[r]; a.active && (!ok || a.first < at) {
			at, ok = a.first, true
		}
	}
	if !ok {
		return stepStart
	}
	return max(at, stepStart)
}

func has(sus []suspect, r int32) bool {
	for _, s := range sus {
		if s.rank == r {
			return true
		}
	}
	return false
}

// report adds (or updates) the finding for a suspect that held long enough.
func (d *Diagnosis) report(k candKey, c *candidate, s suspect, e *timeline.Event, work int64) {
	cost := min(s.excess, work)
	st := costUnknown
	if s.hidden {
		cost = 0 // what it would cost is its exposure, not what the step lost
		var say string
		say, st = hiddenCost(s.exposure, work, c.base, s.explained)
		s.detail += "; " + say
	}
	if s.cost != "" {
		var say string
		say, cost, st = costPhrase(s.cost, s.excess, work-s.explained, c.base, c.bound)
		s.detail += "; " + say
	}
	f := Finding{Kind: s.kind, Rank: s.rank, Host: s.host, Link: s.link, Onset: c.onset, At: e.End, Step: d.step,
		Confidence: s.conf, Severity: cost, CostKnown: st == costKnown, CostBound: st == costBound, Flaps: s.flaps, Evidence: s.detail, FromFirstTraffic: c.first,
		Hidden: s.hidden, Exposure: s.exposure}
	if s.port > 0 {
		f.Port = s.port - 1
	}
	if i, ok := d.reported[k]; ok {
		old := &d.findings[i]
		// The last step it was seen in, as its evidence: the cost the evidence and the next step
		// say is the one severity holds (a measured cost also replaces an unmeasured bound).
		old.Severity = f.Severity
		old.CostKnown = old.CostKnown || f.CostKnown
		old.CostBound = !old.CostKnown && f.CostBound
		old.Flaps = old.Flaps || f.Flaps
		old.Hidden, old.Exposure = f.Hidden, f.Exposure
		if f.Hidden {
			// What its evidence says now: a hidden link's cost is of the step it was last seen in.
			old.CostKnown, old.CostBound = f.CostKnown, f.CostBound
		}
		old.Evidence = f.Evidence
		return
	}
	d.reported[k] = len(d.findings)
	d.findings = append(d.findings, f)
}

// costState says how a finding's cost to the step is known.
type costState uint8

const (
	costUnknown costState = iota // no step before to compare with: the time its work lost, capped at the step
	costBound                    // at most: the growth over a step's lower bound
	costKnown                    // the growth over a clean step before
)

// costPhrase says what a suspect cost the step, and returns it: the step's growth over the
// shortest clean step's work before the suspect was first seen (base), no more than what its
// transfers, launches or kernels (what) lost against their reference (excess) — a delay hidden
// behind other work costs the job nothing, and a step cannot lose more than it grew. work is the
// step without the first step's communicator setup, so the share is of a step as the later ones
// are. With no clean step before (base 0) but a first step whose work after its setup is known
// (bound: less than a whole step's), the growth over it bounds the cost from above. With no step
// before at all, what it cost is unknown, and the phrase says what is known: never more than the
// step (the figure returned).
func costPhrase(what string, excess, work, base, bound int64) (string, int64, costState) {
	excess = max(excess, 0)
	verb := "took " + fmtNs(excess) + " longer"
	if what == "its launches" || what == "its arrivals" {
		verb = "came " + fmtNs(excess) + " later in all"
	}
	if base <= 0 && bound > 0 {
		return boundPhrase(what, verb, excess, work, bound)
	}
	if base <= 0 {
		return fmt.Sprintf("%s %s; what that cost the step is unknown (no step before it to compare with)", what, verb), min(excess, work), costUnknown
	}
	grew := max(work-base, 0)
	cost := min(excess, grew)
	pct := 100 * float64(cost) / float64(max(work, 1))
	if cost == 0 {
		return fmt.Sprintf("costs the step nothing measurable: %s %s, hidden behind other work (the step %s, no longer than the shortest step before it, %s)",
			what, verb, fmtNs(work), fmtNs(base)), 0, costKnown
	}
	if float64(excess) > 1.1*float64(cost) {
		return fmt.Sprintf("costs the step %s, %.1f%% of it (the step grew %s over the shortest step before it; %s %s, the rest hidden behind other work)",
			fmtNs(cost), pct, fmtNs(grew), what, verb), cost, costKnown
	}
	return fmt.Sprintf("costs the step %s, %.1f%% of it (%s %s; the step grew %s over the shortest step before it)", fmtNs(cost), pct, what, verb, fmtNs(grew)), cost, costKnown
}

// boundPhrase is costPhrase's where every step before made communicators with ops running between
// the creations (a first step): its work, from the last creation's end (bound), is less than a
// whole step's, so the step's growth over it is at least what the suspect cost.
func boundPhrase(what, verb string, excess, work, bound int64) (string, int64, costState) {
	const why = "counted from the end of its communicators' setup, less than a whole step: its ops ran between the creations"
	grew := max(work-bound, 0)
	if grew == 0 {
		return fmt.Sprintf("costs the step nothing measurable: %s %s, hidden behind other work (the step %s, no longer than the shortest step before it, %s, %s)",
			what, verb, fmtNs(work), fmtNs(bound), why), 0, costKnown
	}
	cost := min(excess, grew)
	return fmt.Sprintf("%s %s; what that cost the step is at most %s, %.1f%% of it (the step grew %s over the shortest step before it, %s, %s)",
		what, verb, fmtNs(cost), 100*float64(cost)/float64(max(work, 1)), fmtNs(grew), fmtNs(bound), why), cost, costBound
}

// reset clears the per-step accumulators.
func (d *Diagnosis) reset(at int64) {
	d.stepStart = at
	d.setup = setupAcc{}
	d.busy.reset()
	for _, s := range d.self.slow {
		clear(s)
	}
	d.win.peers, d.win.portPeers = [3]int{}, 0
	clear(d.portSlow)
	for i := range d.ranks {
		d.ranks[i] = rankAcc{qmin: -1}
	}
	clear(d.kMin)
	for i := range d.kSum {
		clear(d.kSum[i])
		clear(d.kCnt[i])
		clear(d.kSlow[i])
	}
	for i := range d.oSum {
		clear(d.oSum[i])
		clear(d.oCnt[i])
	}
	clear(d.pairs)
	clear(d.barriers)
}

// medMAD returns the median and the (floored) scaled median absolute deviation of xs, which it
// reorders.
func medMAD(xs []float64) (med, mad float64) {
	slices.Sort(xs)
	med = xs[len(xs)/2]
	dev := make([]float64, len(xs))
	for i, x := range xs {
		dev[i] = math.Abs(x - med)
	}
	slices.Sort(dev)
	mad = 1.4826 * dev[len(dev)/2]
	return med, max(mad, madFloor*math.Abs(med))
}

// slowGPU compares each rank's kernels with the same kernels on its peers this step: per label,
// the peers' median time per call; per rank, its kernel time over what the peers' medians give for
// the same calls. The rank whose ratio stands out is the suspect. When that rank's slowness is
// confined to some kernels (uneven work under one name: a mixture of experts' hot expert, whose
// kernel time is ten times its peers' by design), its ratio can hide a throttled GPU that ranks
// lower: the kernels its peers run alike are compared alone then (slowGPUAlike).
func (d *Diagnosis) slowGPU() (suspect, bool) {
	num, den := d.kernelRatios(false)
	s, ok := d.outlier(SlowGPU, num, den, gpuRatio, func(r int, ratio float64) string {
		return fmt.Sprintf("kernels took %.2f× their time on the peers that ran the same kernels this step", ratio)
	})
	s.cost = "its kernels"
	if ok {
		s.evidence = d.firstSlowKernel(int(s.rank))
	}
	if ok && d.kernelAtPeerSpeed(int(s.rank), false) {
		s.confined = true
		s.detail += "; some of its kernels ran at their peers' speed (uneven work under one kernel name looks the same)"
	}
	if !ok || s.confined {
		if u, uok := d.slowGPUAlike(); uok {
			return u, true
		}
	}
	return s, ok
}

// alikeSpread: a kernel label whose ranks' times per call spread (MAD) over more than this share
// of their median is uneven work under one name (an expert's tokens), not a reference a GPU 5%
// slow (gpuRatio) can be told by.
const alikeSpread = gpuRatio - 1

// slowGPUAlike compares each rank's kernels with its peers' on the labels the peers ran alike
// (their spread within alikeSpread): a throttled GPU is slow in all of them, a hot expert in none.
// Its onset and confinement are judged on those labels too.
func (d *Diagnosis) slowGPUAlike() (suspect, bool) {
	num, den := d.kernelRatios(true)
	s, ok := d.outlier(SlowGPU, num, den, gpuRatio, func(r int, ratio float64) string {
		return fmt.Sprintf("kernels took %.2f× their time on the peers that ran the same kernels this step, among the kernels its peers ran alike (others' time varies with their work: uneven under one name)", ratio)
	})
	if !ok {
		return suspect{}, false
	}
	s.cost = "its kernels"
	s.evidence = d.firstSlowKernel(int(s.rank))
	if d.kernelAtPeerSpeed(int(s.rank), true) {
		s.confined = true
		s.detail += "; some of its kernels ran at their peers' speed"
	}
	return s, true
}

// kernelRatios is, per rank, its kernel time this step (num) and what its peers' median time per
// call gives for the same calls (den), over the labels at least minPeers ranks ran; alike: only
// those whose ranks' times spread within alikeSpread of their median.
func (d *Diagnosis) kernelRatios(alike bool) (num, den []float64) {
	n := len(d.ranks)
	num, den = make([]float64, n), make([]float64, n)
	var means []float64
	for slot := range d.kSum {
		med, ok := d.labelMedian(slot, alike, &means)
		if !ok {
			continue
		}
		sum, cnt := d.kSum[slot], d.kCnt[slot]
		for r := range sum {
			if cnt[r] > 0 {
				num[r] += sum[r]
				den[r] += float64(cnt[r]) * med
			}
		}
	}
	return num, den
}

// labelMedian is the median over ranks of label slot's mean time per call this step; ok is false
// when fewer than minPeers ranks ran it or, with alike, when their times spread over alikeSpread
// of it. means is scratch.
func (d *Diagnosis) labelMedian(slot int, alike bool, means *[]float64) (float64, bool) {
	sum, cnt := d.kSum[slot], d.kCnt[slot]
	xs := (*means)[:0]
	for r := range sum {
		if cnt[r] > 0 {
			xs = append(xs, sum[r]/float64(cnt[r]))
		}
	}
	*means = xs
	if len(xs) < minPeers {
		return 0, false
	}
	if !alike {
		slices.Sort(xs)
		return xs[len(xs)/2], true
	}
	med, mad := medMAD(xs)
	return med, med > 0 && mad <= alikeSpread*med
}

// firstSlowKernel is the start + 1 of rank r's first kernel this step that took gpuRatio× the
// shortest call of its name seen before it, among the names it ran slower than its peers' median
// (0: none): where its slowness began, when the step began healthy.
func (d *Diagnosis) firstSlowKernel(r int) int64 {
	var first int64
	var means []float64
	for slot := range d.kSum {
		sum, cnt := d.kSum[slot], d.kCnt[slot]
		if r >= len(sum) || cnt[r] == 0 || r >= len(d.kSlow[slot]) || d.kSlow[slot][r] == 0 {
			continue
		}
		means = means[:0]
		for p := range sum {
			if cnt[p] > 0 {
				means = append(means, sum[p]/float64(cnt[p]))
			}
		}
		slices.Sort(means)
		if med := means[len(means)/2]; sum[r]/float64(cnt[r]) >= gpuRatio*med {
			if at := d.kSlow[slot][r]; first == 0 || at < first {
				first = at
			}
		}
	}
	return first
}

// kernelAtPeerSpeed reports whether one of rank r's kernel names ran this step within gpuRatio
// of its peers' median (alike: among the names its peers ran alike).
func (d *Diagnosis) kernelAtPeerSpeed(r int, alike bool) bool {
	var means []float64
	for slot := range d.kSum {
		sum, cnt := d.kSum[slot], d.kCnt[slot]
		if r >= len(sum) || cnt[r] == 0 {
			continue
		}
		med, ok := d.labelMedian(slot, alike, &means)
		if ok && med > 0 && sum[r]/float64(cnt[r]) < gpuRatio*med {
			return true
		}
	}
	return false
}

// slowHost compares when each rank's host launched its step's work with the ranks that launched as
// many ops (the same role): a host slow to launch spreads its launches over longer.
func (d *Diagnosis) slowHost() (suspect, bool) {
	groups := map[int32][]int{}
	for r := range d.ranks {
		if d.ranks[r].launches > 0 {
			groups[d.ranks[r].launches] = append(groups[d.ranks[r].launches], r)
		}
	}
	n := len(d.ranks)
	num, den := make([]float64, n), make([]float64, n)
	var spans []float64
	for _, rs := range groups {
		if len(rs) < minPeers {
			continue
		}
		spans = spans[:0]
		for _, r := range rs {
			spans = append(spans, float64(d.ranks[r].qmax-d.ranks[r].qmin))
		}
		slices.Sort(spans)
		med := spans[len(spans)/2]
		if med <= 0 {
			continue
		}
		for _, r := range rs {
			num[r], den[r] = float64(d.ranks[r].qmax-d.ranks[r].qmin), med
		}
	}
	return d.outlier(SlowHost, num, den, hostRatio, func(r int, ratio float64) string {
		return fmt.Sprintf("launched its step's %s over %.2f× the time its peers took",
			units.Counted(d.ranks[r].launches, "op"), ratio)
	})
}

// outlier finds the rank whose num/den stands out from its peers' (median and MAD of every rank's
// ratio): at least minRatio and zLimit robust deviations above the median. Its confidence is how
// far it stands from the next suspect; where several ranks stand out as far (a tie), one of n
// equally likely ranks is 1/n. For a slow host, when the ranks that stand out are two or more and
// all the ranks of one host compared (a host's CPU contention slows all its ranks alike), the
// suspect is that host, its rank unknown: naming its lowest rank would be a guess.
func (d *Diagnosis) outlier(kind Kind, num, den []float64, minRatio float64, say func(r int, ratio float64) string) (suspect, bool) {
	var ratios []float64
	best, bestR, second := -1, 0.0, 0.0
	for r := range num {
		if den[r] <= 0 {
			continue
		}
		x := num[r] / den[r]
		ratios = append(ratios, x)
		if x > bestR {
			best, second, bestR = r, bestR, x
		} else if x > second {
			second = x
		}
	}
	if len(ratios) < minPeers || best < 0 {
		return suspect{}, false
	}
	med, mad := medMAD(ratios)
	stands := func(x float64) bool { return x >= minRatio*med && x-med >= zLimit*mad }
	if !stands(bestR) {
		return suspect{}, false
	}
	var out []int32 // the ranks that stand out
	for r := range num {
		if den[r] > 0 && stands(num[r]/den[r]) {
			out = append(out, int32(r))
		}
	}
	if kind == SlowHost {
		if s, ok := d.wholeHostOutlier(out, num, den, med, say); ok {
			return s, true
		}
	}
	conf := 1.0
	if bestR > med {
		conf = math.Min(1, (bestR-max(second, med))/(bestR-med))
	}
	if conf <= 0 {
		conf = 1 / float64(len(out)) // tied with others that stand out as far
	}
	s := suspect{kind: kind, rank: int32(best), host: d.hostOf(int32(best)), ratio: bestR / med, conf: conf, excess: int64(num[best] - den[best]),
		link: -1, detail: say(best, bestR/med)}
	if kind == SlowHost {
		s.cost = "its launches"
	}
	return s, true
}

// wholeHostOutlier is the slow-host suspect when the ranks that stand out (out, two or more) are
// every rank of one host that was compared: the host, its rank unknown. Its ratio is the least of
// its ranks', its confidence how far that stands above the most any rank elsewhere reached.
func (d *Diagnosis) wholeHostOutlier(out []int32, num, den []float64, med float64, say func(r int, ratio float64) string) (suspect, bool) {
	h := d.hostOf(out[0])
	if h < 0 || len(out) < 2 {
		return suspect{}, false
	}
	low, lowR := 0.0, -1
	for _, r := range out {
		if d.hostOf(r) != h {
			return suspect{}, false
		}
		if x := num[r] / den[r]; lowR < 0 || x < low {
			low, lowR = x, int(r)
		}
	}
	compared := 0
	next := med // the most any rank of another host reached
	for r := range num {
		switch {
		case den[r] <= 0:
		case d.hostOf(int32(r)) == h:
			compared++
		default:
			next = max(next, num[r]/den[r])
		}
	}
	if compared != len(out) || low <= med {
		return suspect{}, false // some of the host's ranks at their peers' pace: not the whole host
	}
	var excess int64
	for _, r := range out {
		excess = max(excess, int64(num[r]-den[r]))
	}
	return suspect{kind: SlowHost, rank: -1, host: h, ratio: low / med, conf: math.Min(1, (low-next)/(low-med)), excess: excess, link: -1, cost: "its launches",
		detail: fmt.Sprintf("all %s of the host stand out alike (%s): the least slow %s", units.Counted(len(out), "rank"), rankSpan(out, len(out)), say(lowR, low/med))}, true
}

func fmtNs(ns int64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.2f s", float64(ns)/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.1f ms", float64(ns)/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.1f µs", float64(ns)/1e3)
	}
	return fmt.Sprintf("%d ns", ns)
}
