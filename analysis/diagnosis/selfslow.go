package diagnosis

import (
	"fmt"
	"math"

	"github.com/xfertop/xfertop/timeline"
)

// A GPU whose kernels no peer runs (a pipeline's stage runs its own, "stage1 fwd") cannot be
// compared with its peers at the same step: it is compared with itself before. Per kernel label
// and rank the diagnosis keeps the lowest mean time per call of the earlier steps (selfBase) and
// the shortest call seen (selfMin); at the end of a step, over the labels fewer than minPeers
// ranks ran, each rank's kernel time over what its own earlier means give for the same calls is
// its ratio, and the ranks' ratios are compared as the peers' are (slowGPU): a rank whose kernels
// got slower from some onset stands out from the ranks whose kernels did not. Its peers waiting on
// it is what makes it cost the job: the step must have grown by at least half its kernels' extra
// time over the shortest step before (workBase), else the slowness is hidden and not a finding.

// selfState is the per label and rank history the self comparison needs, kept across steps.
type selfState struct {
	base [][]float64 // slot → per rank, the lowest mean per call of an earlier step (0: none)
	min  [][]float64 // slot → per rank, the shortest call seen (0: none)
	// slow is per slot and rank the start + 1 of the rank's first call this step that took
	// gpuRatio× the shortest call of its name seen before it on that rank (0: none).
	slow [][]int64
}

// addSelf notes a kernel of slot on e's rank for the self comparison.
func (d *Diagnosis) addSelf(slot int32, e *timeline.Event, dur float64) {
	s := &d.self
	for int(slot) >= len(s.base) {
		s.base, s.min, s.slow = append(s.base, nil), append(s.min, nil), append(s.slow, nil)
	}
	n := len(d.ranks)
	if len(s.base[slot]) < n {
		s.base[slot] = append(s.base[slot], make([]float64, n-len(s.base[slot]))...)
		s.min[slot] = append(s.min[slot], make([]float64, n-len(s.min[slot]))...)
		s.slow[slot] = append(s.slow[slot], make([]int64, n-len(s.slow[slot]))...)
	}
	switch m := s.min[slot][e.Device]; {
	case m == 0 || dur < m:
		s.min[slot][e.Device] = dur
	case dur >= gpuRatio*m && s.slow[slot][e.Device] == 0:
		s.slow[slot][e.Device] = e.Start + 1
	}
}

// selfSlowGPU finds the rank whose kernels without peers took longer than the same kernels on it
// in earlier steps (the package comment above). growth is how much longer the step's work was
// than the shortest before (negative: none known).
func (d *Diagnosis) selfSlowGPU(growth int64) (suspect, bool) {
	n := len(d.ranks)
	num, den := make([]float64, n), make([]float64, n)
	any := false
	for slot := range d.kSum {
		if slot >= len(d.self.base) {
			break
		}
		sum, cnt, base := d.kSum[slot], d.kCnt[slot], d.self.base[slot]
		ran := 0
		for r := range sum {
			if cnt[r] > 0 {
				ran++
			}
		}
		if ran == 0 || ran >= minPeers {
			continue // peers ran it: slowGPU compares them
		}
		for r := range sum {
			if cnt[r] > 0 && r < len(base) && base[r] > 0 {
				num[r] += sum[r]
				den[r] += float64(cnt[r]) * base[r]
				any = true
			}
		}
	}
	if !any || growth < 0 {
		return suspect{}, false
	}
	s, ok := d.selfOutlier(num, den)
	if !ok || 2*growth < s.excess {
		// Its peers did not wait on it (the step did not grow by half its kernels' extra time):
		// the slowness is hidden behind other work and costs the job little.
		return suspect{}, false
	}
	s.evidence = d.firstSelfSlow(int(s.rank))
	s.detail = fmt.Sprintf("its kernels took %.2f× their own time per call in earlier steps (no other rank ran them this step, as a pipeline stage runs its own; the other ranks' kernels %.2f× theirs): the other ranks waited on it",
		num[s.rank]/den[s.rank], s.peer)
	s.cost = "its kernels"
	return s, true
}

// selfOutlier is the rank whose kernels slowed most against their own earlier time, when it
// stands out from the others' ratios: at least gpuRatio× their median and zLimit robust
// deviations above it. The median and deviation are the others' (leave one out): with a
// pipeline's four stages, the suspect's own ratio in the deviation of four would hide it.
func (d *Diagnosis) selfOutlier(num, den []float64) (suspect, bool) {
	best, bestR := -1, 0.0
	for r := range num {
		if den[r] > 0 && (best < 0 || num[r]/den[r] > bestR) {
			best, bestR = r, num[r]/den[r]
		}
	}
	var others []float64
	for r := range num {
		if den[r] > 0 && r != best {
			others = append(others, num[r]/den[r])
		}
	}
	if best < 0 || len(others) < minPeers-1 {
		return suspect{}, false
	}
	med, mad := medMAD(others)
	if bestR < gpuRatio*med || bestR-med < zLimit*mad {
		return suspect{}, false
	}
	second := others[len(others)-1] // medMAD sorted them
	conf := math.Min(1, (bestR-max(second, med))/(bestR-med))
	return suspect{kind: SlowGPU, rank: int32(best), host: d.hostOf(int32(best)), ratio: bestR / med, conf: max(conf, 0.01),
		excess: int64(num[best] - den[best]), link: -1, peer: med}, true
}

// firstSelfSlow is the start + 1 of rank r's first kernel this step that took gpuRatio× the
// shortest call of its name seen before it on r (0: none), among the labels without peers.
func (d *Diagnosis) firstSelfSlow(r int) int64 {
	var first int64
	for slot := range d.self.slow {
		if r >= len(d.self.slow[slot]) || slot >= len(d.kCnt) || r >= len(d.kCnt[slot]) || d.kCnt[slot][r] == 0 {
			continue
		}
		if at := d.self.slow[slot][r]; at > 0 && (first == 0 || at < first) {
			first = at
		}
	}
	return first
}

// endSelf folds the step's kernel means into each rank's history: the lowest mean per call of a
// step so far. The slowed steps' means are higher, so a history is its healthy steps'.
func (d *Diagnosis) endSelf() {
	for slot := range d.kSum {
		if slot >= len(d.self.base) {
			break
		}
		sum, cnt, base := d.kSum[slot], d.kCnt[slot], d.self.base[slot]
		for r := range sum {
			if cnt[r] == 0 || r >= len(base) {
				continue
			}
			if m := sum[r] / float64(cnt[r]); base[r] == 0 || m < base[r] {
				base[r] = m
			}
		}
	}
}
