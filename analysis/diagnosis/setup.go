package diagnosis

import "github.com/xfertop/xfertop/timeline"

// maxSpans bounds busyUnion: the union of a step's busy time over every device is a few
// intervals (someone is nearly always busy; the first step is its work before the
// communicators' creation, the wait for it, and the work after).
const maxSpans = 16

// busyUnion is the union of the step's busy intervals (kernels, transfers, copies) on every
// device, sorted and disjoint, at most maxSpans of them: past that the two nearest are merged,
// the gap between them counted busy. A merge can only make a communicator's creation look
// overlapped by work (its step then is not a clean reference, stepWork), never the reverse.
type busyUnion struct {
	iv [maxSpans + 1][2]int64
	n  int
}

func (u *busyUnion) reset() { u.n = 0 }

// add adds [s, e).
func (u *busyUnion) add(s, e int64) {
	e = max(e, s)
	// The first interval that ends at or after s: the only one s can join.
	lo, hi := 0, u.n
	for lo < hi {
		m := (lo + hi) / 2
		if u.iv[m][1] < s {
			lo = m + 1
		} else {
			hi = m
		}
	}
	i := lo
	if i < u.n && u.iv[i][0] <= e {
		u.iv[i][0] = min(u.iv[i][0], s)
		end := max(u.iv[i][1], e)
		j := i + 1
		for j < u.n && u.iv[j][0] <= end {
			end = max(end, u.iv[j][1])
			j++
		}
		u.iv[i][1] = end
		copy(u.iv[i+1:], u.iv[j:u.n])
		u.n -= j - i - 1
		return
	}
	copy(u.iv[i+1:u.n+1], u.iv[i:u.n])
	u.iv[i] = [2]int64{s, e}
	u.n++
	if u.n > maxSpans {
		k := 0
		for m := 1; m+1 < u.n; m++ {
			if u.iv[m+1][0]-u.iv[m][1] < u.iv[k+1][0]-u.iv[k][1] {
				k = m
			}
		}
		u.iv[k][1] = u.iv[k+1][1]
		copy(u.iv[k+1:], u.iv[k+2:u.n])
		u.n--
	}
}

// setupAcc is the step's communicator creations (those that took time): when the first began,
// the first ended and the last ended (initEnd: 0, none).
type setupAcc struct {
	initStart, initFirstEnd, initEnd int64
}

func (a *setupAcc) add(e *timeline.Event) {
	if e.End <= e.Start {
		return
	}
	if a.initEnd == 0 {
		a.initStart, a.initFirstEnd, a.initEnd = e.Start, e.End, e.End
		return
	}
	a.initStart = min(a.initStart, e.Start)
	a.initFirstEnd = min(a.initFirstEnd, e.End)
	a.initEnd = max(a.initEnd, e.End)
}

// stepWork is the step's time without the communicators' creation in it (the first step's setup),
// and whether that is a whole step's work (clean), which a later step's growth can be measured
// against.
//
// A step without a creation is clean, all of it. A step whose creations nothing ran across is
// clean too: its ops split into those that ended before the first creation ended (the work that
// needed no communicator, run beside the creation: overlap's first backward kernels) and those
// that started after the last creation ended; between the two every device waited on the setup
// alone, and the step less that wait is its work (its work before, up to the later of the last of
// those ops' end and the creations' start, plus its work after). Checked against healthy runs of
// every built-in scenario (TestFirstStepWork): within 1% of their later steps.
//
// Otherwise (ops ran between the creations: a pipeline whose stages make their communicators one
// after another as it fills, llm-train's) the setup's share of the step is not known: its work is
// counted from the end of the last creation, which is less than a whole step's (the work before
// it is left out), and not clean: a lower bound of a step, which bounds a later step's growth from
// above.
func (d *Diagnosis) stepWork(e *timeline.Event) (work int64, clean bool) {
	s := &d.setup
	if s.initEnd <= e.Start {
		return max(e.End-e.Start, 1), true
	}
	if s.initEnd >= e.End {
		return max(e.End-e.Start, 1), false
	}
	before := max(s.initStart, e.Start) // the work before the setup's wait ends here
	for i := range d.busy.n {
		iv := d.busy.iv[i]
		if iv[0] >= s.initEnd {
			break
		}
		if iv[1] > s.initFirstEnd {
			return max(e.End-s.initEnd, 1), false
		}
		before = max(before, iv[1])
	}
	return max(e.End-e.Start-(s.initEnd-before), 1), true
}
