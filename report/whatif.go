package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/xfertop/xfertop/units"
)

// CriticalPath is a run's mean critical path per step: its length and the time on it by category
// (compute, communication, copies, launch, waits; depgraph's categories).
type CriticalPath struct {
	Steps      int                `json:"steps"`
	FirstLeft  bool               `json:"first_step_left_out"` // the first step (warm-up) is not in the mean
	Whole      bool               `json:"whole_input"`         // no steps: the path is the whole input's
	StepNs     float64            `json:"step_ns"`
	ByCategory map[string]float64 `json:"by_category"`
	// Definition is "hta" when the path is Holistic Trace Analysis's longest weighted path
	// (analyze --critical-path=hta), empty for the chain that bound each step's end.
	Definition string `json:"definition,omitempty"`
	// Largest are the path's largest contributors per step (analyze --critical-path), most first:
	// the time the ops of one rank, of one kind, over one link, have on it.
	Largest []PathContributor `json:"largest,omitempty"`
}

// PathContributor is the time per step one group of ops has on the critical path: a rank's ops of
// one kind (its kernels, its sends over a link, its part of a collective).
type PathContributor struct {
	Category string  `json:"category"`       // compute, communication, copies, launch, waits
	What     string  `json:"what"`           // in words: "rank 299's sends over host 37 NIC 3"
	Rank     *int32  `json:"rank,omitempty"` // the ops' device (global id); none for a collective's (every rank's)
	Host     *int    `json:"host,omitempty"`
	Comm     *uint32 `json:"communicator,omitempty"` // a collective's
	Ranks    []int32 `json:"ranks,omitempty"`        // a collective's ranks (devices), as its events name them
	Kind     string  `json:"kind"`                   // the ops' kind: kernel, send, recv, all_gather, …
	Link     string  `json:"link,omitempty"`         // the link a send or receive crosses: "host 37 NIC 3", "NVLink"
	Ns       float64 `json:"ns_per_step"`
}

// criticalText writes the critical path's line: its length per step and each category's share.
func criticalText(b *strings.Builder, p *CriticalPath) {
	if p == nil {
		return
	}
	if p.Steps == 0 {
		b.WriteString("\nCritical path: — (no step, and no op, to find it in)\n")
		return
	}
	title := "Critical path"
	if p.Definition == "hta" {
		title = "Critical path (HTA's definition)"
	}
	if p.Whole {
		fmt.Fprintf(b, "\n%s: %s, the whole input's (it has no steps):", title, units.Dur(int64(p.StepNs)))
	} else {
		fmt.Fprintf(b, "\n%s: %s per step (mean of %d", title, units.Dur(int64(p.StepNs)), p.Steps)
		if p.FirstLeft {
			b.WriteString(", the first step left out")
		}
		b.WriteString("):")
	}
	for i, k := range criticalCategories {
		sep := ","
		if i == 0 {
			sep = ""
		}
		v := p.ByCategory[k]
		pct := 0.0
		if p.StepNs > 0 {
			pct = 100 * v / p.StepNs
		}
		fmt.Fprintf(b, "%s %s %s (%.0f%%)", sep, k, units.Dur(int64(v)), pct)
	}
	b.WriteString("\n")
	if len(p.Largest) > 0 {
		b.WriteString("  largest on it, per step:")
		for i, c := range p.Largest {
			sep := ";"
			if i == 0 {
				sep = ""
			}
			fmt.Fprintf(b, "%s %s %s in %s", sep, c.Category, units.Dur(int64(c.Ns)), c.What)
		}
		b.WriteString("\n")
	}
}

// criticalCategories are the categories in the order rows show them.
var criticalCategories = []string{"compute", "communication", "copies", "launch", "waits"}

// AddCriticalPaths adds the critical-path rows: the path's length per step (the step time along
// the graph, known for traces without step markers too), the communication on it (exposed: the
// communication nothing overlapped), and each category's time per step.
func AddCriticalPaths(c *Comparison, a, b CriticalPath) {
	val := func(p CriticalPath, v float64) *float64 {
		if p.Steps == 0 {
			return nil
		}
		return &v
	}
	c.Rows = append(c.Rows, row("critical path", "length per step", UnitNs, val(a, a.StepNs), val(b, b.StepNs), true))
	c.Rows = append(c.Rows, row("critical path", "exposed communication per step", UnitNs,
		val(a, a.ByCategory["communication"]), val(b, b.ByCategory["communication"]), true))
	for _, k := range criticalCategories {
		c.Rows = append(c.Rows, row("critical path", k+" on it per step", UnitNs, val(a, a.ByCategory[k]), val(b, b.ByCategory[k]), true))
	}
}

// SetNoiseFloor withholds a verdict from every row whose relative change is within ±pct (a change
// that small is not told apart from the method's own error), and gives the comparison its verdict
// on step time: the report's mean step time, or the critical path's length where the runs have no
// steps.
func (c *Comparison) SetNoiseFloor(pct float64, why string) {
	c.NoiseFloorPct, c.NoiseFloorWhy = &pct, why
	for i := range c.Rows {
		if r := &c.Rows[i]; r.DiffPct != nil && math.Abs(*r.DiffPct) < pct {
			r.Better = nil
		}
	}
	c.verdict(pct, "")
}

// verdictRow is the row the verdict is taken on: the mean step time after the first step where
// the runs have steps (steps true; nil when a run lacks it), else the critical path's length.
func (c *Comparison) verdictRow() (step *Row, steps bool) {
	for i := range c.Rows {
		r := &c.Rows[i]
		if r.Name == SteadyRow { // added where a run has steps
			steps = true
			if r.A != nil && r.B != nil {
				step = r
			}
		}
	}
	for i := range c.Rows {
		if r := &c.Rows[i]; !steps && step == nil && r.A != nil && r.B != nil && r.Name == "length per step" {
			step = r
		}
	}
	return step, steps
}

// verdict gives the comparison its answer on step time, against the noise floor pct (of the
// verdict's own row, said by whose, when that row has one of its own).
func (c *Comparison) verdict(pct float64, whose string) {
	step, steps := c.verdictRow()
	switch {
	case steps && (c.SteadyStepsA < 2 || c.SteadyStepsB < 2):
		// One step after the first has no spread to weigh a difference against, and the first
		// alone (warming up) is not the run's step time.
		c.Verdict = fmt.Sprintf("no verdict: fewer than two steps after the first (A %d, B %d); run more steps", c.SteadyStepsA, c.SteadyStepsB)
		return
	case steps && step == nil:
		c.Verdict = "no verdict: a run's step time after the first step is unknown"
		return
	}
	if step == nil {
		c.Verdict = "no verdict: neither run has a step time"
		return
	}
	d := 0.0
	if step.DiffPct != nil {
		d = *step.DiffPct
	}
	span := fmt.Sprintf("%s %s → %s", step.Name, units.Dur(int64(*step.A)), units.Dur(int64(*step.B)))
	floor := fmt.Sprintf("the ±%.1f%% noise floor", pct)
	if whose != "" {
		floor = fmt.Sprintf("the ±%.1f%% noise floor of %s", pct, whose)
	}
	// A change as large as the floor (the unchanged replay's own error) is that error, not the
	// change's: within, at the hundredths the row's change is rounded to.
	within := round2(math.Abs(d)) <= round2(pct)
	switch {
	case within:
		c.Verdict = fmt.Sprintf("no difference beyond %s (%s, %+.1f%%)", floor, span, d)
	case d < 0:
		c.Verdict = fmt.Sprintf("B is %.1f%% faster (%s), beyond %s", -d, span, floor)
	default:
		c.Verdict = fmt.Sprintf("B is %.1f%% slower (%s), beyond %s", d, span, floor)
	}
}

// SetRowFloors gives each row whose change the unchanged replay (base: A against the replay with
// nothing changed, rows as c's) already shows beyond the comparison's noise floor a floor of its
// own, that change: the method's own error on that figure (a collective's bandwidth the model
// times apart from the measurement, the idle that follows from it). No verdict is given within it.
// A row whose A is 0 has no relative change: within the unchanged replay's absolute change it gets
// no verdict either. A row (but the step times) the unchanged replay moves by more than
// NotReproducedPct is marked not reproduced. The comparison's verdict is taken again against its row's own floor, where
// that row has one. Call it after SetNoiseFloor.
func (c *Comparison) SetRowFloors(base *Comparison) {
	floor := 0.0
	if c.NoiseFloorPct != nil {
		floor = *c.NoiseFloorPct
	}
	byKey := map[string]*Row{}
	for i := range base.Rows {
		byKey[rowKey(&base.Rows[i])] = &base.Rows[i]
	}
	for i := range c.Rows {
		r := &c.Rows[i]
		b, ok := byKey[rowKey(r)]
		if !ok || b.Diff == nil || *b.Diff == 0 {
			continue
		}
		if b.DiffPct != nil && math.Abs(*b.DiffPct) > floor {
			f := math.Abs(*b.DiffPct)
			r.NoiseFloorPct = &f
			if r.DiffPct != nil && math.Abs(*r.DiffPct) <= f {
				r.Better = nil
			}
			// The step times stay: the verdict is on them, against their floor.
			if f > NotReproducedPct && r.Section != "steps" {
				r.NotReproduced, r.Better = true, nil
			}
		}
		if b.DiffPct == nil && r.Diff != nil && math.Abs(*r.Diff) <= math.Abs(*b.Diff) {
			r.Better = nil
		}
	}
	if step, _ := c.verdictRow(); step != nil && step.NoiseFloorPct != nil && c.NoiseFloorPct != nil {
		c.verdict(*step.NoiseFloorPct, "that row (the unchanged replay's change on it)")
	}
}

// rowKey names a row across comparisons of the same A: its section and name, a collective's
// without the algorithms (which the change may alter).
func rowKey(r *Row) string {
	if r.Section != "collectives" {
		return r.Section + "\x00" + r.Name
	}
	f := strings.Fields(r.Name)
	return r.Section + "\x00" + strings.Join(f[:min(3, len(f))], " ")
}

// NotReproducedPct is the change of the unchanged replay on a row beyond which the replay does not
// reproduce it: the row's causes are not in the graph (a simulator's recording replayed loses its
// stream gaps' causes and part of the devices' idle: +591,331% on one), and B's figure there is
// no prediction.
const NotReproducedPct = 50.0

// notReproduced lists the rows the replay does not reproduce (the unchanged replay's change on
// them, which can run to six digits, is in the JSON: it says nothing more to a reader).
func notReproduced(c *Comparison) []string {
	var out []string
	for _, r := range c.Rows {
		if r.NotReproduced {
			out = append(out, r.Name)
		}
	}
	return out
}

// rowFloors lists the rows with a floor of their own, for people (but those not reproduced).
func rowFloors(c *Comparison) []string {
	var out []string
	for _, r := range c.Rows {
		if r.NoiseFloorPct != nil && !r.NotReproduced {
			out = append(out, fmt.Sprintf("%s ±%.1f%%", r.Name, *r.NoiseFloorPct))
		}
	}
	return slices.Clip(out)
}

// DirectedOnly leaves "better" and "worse" only on the rows whose direction means that whatever
// the change: step times, GB/s and busbw, the critical path's length and the communication exposed
// on it. Idle and overlap follow the work: halving the kernels leaves the device idle longer while
// the step shortens, and a slower all-reduce overlaps more of the compute; nor is more compute on
// the critical path worse when the step is as long. Those rows keep their figures, without a word.
func (c *Comparison) DirectedOnly() {
	for i := range c.Rows {
		r := &c.Rows[i]
		switch {
		case r.Section == "idle", r.Section == "overlap":
			r.Better = nil
		case r.Section == "critical path" && r.Name != "length per step" && r.Name != "exposed communication per step":
			r.Better = nil
		}
	}
}

// ScaledOut labels the collective rows of a job scaled from `from` ranks to `to` (whatif --hosts):
// a collective over every rank of the trace ran, in B, over every rank of the scaled job
// ("all_gather ×16 → ×64 …"). B's figures come from the trace's ranks' parts, replayed at the
// scaled job's time.
func (c *Comparison) ScaledOut(from, to int) {
	if from <= 0 || to <= from {
		return
	}
	old := fmt.Sprintf(" ×%d ", from)
	for i := range c.Rows {
		r := &c.Rows[i]
		if r.Section == "collectives" && r.B != nil && strings.Contains(r.Name, old) {
			r.Name = strings.Replace(r.Name, old, fmt.Sprintf(" ×%d → ×%d ", from, to), 1)
		}
	}
}
