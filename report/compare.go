package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/charmbracelet/x/ansi"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/units"
)

// Unit says how a compared figure is measured and whether more of it is better.
type Unit string

// Units of compared figures.
const (
	UnitNs   Unit = "ns"   // less is better
	UnitGBps Unit = "GB/s" // more is better
	UnitPct  Unit = "%"    // of something: the row's name says of what
)

// Row is one figure in both runs: A, B, and B − A, with its relative change. A figure one run lacks
// is null there, and so are the differences.
type Row struct {
	Section string   `json:"section"`
	Name    string   `json:"name"`
	Unit    Unit     `json:"unit"`
	A       *float64 `json:"a"`
	B       *float64 `json:"b"`
	Diff    *float64 `json:"diff"`     // B − A
	DiffPct *float64 `json:"diff_pct"` // (B − A) / A, in percent
	// Better says whether B improves on A (true), worsens it (false), or either (null).
	Better *bool `json:"better"`
	// NoiseFloorPct, when set, is the row's own noise floor: the change the replay with nothing
	// changed already shows on it, above the comparison's (Comparison.SetRowFloors).
	NoiseFloorPct *float64 `json:"noise_floor_pct,omitempty"`
	// NotReproduced marks a row the replay with nothing changed cannot reproduce: it moves it by
	// more than NotReproducedPct, and B's figure there is no prediction (the change column says so).
	NotReproduced bool `json:"not_reproduced,omitempty"`
	// AMin, AMax, BMin and BMax bound a rate A or B that the timestamps' resolution leaves
	// uncertain (A or B null), as analysis.Stats' GBpsMin and GBpsMax do; absent otherwise.
	AMin *float64 `json:"a_min,omitempty"`
	AMax *float64 `json:"a_max,omitempty"`
	BMin *float64 `json:"b_min,omitempty"`
	BMax *float64 `json:"b_max,omitempty"`
}

// Comparison lays two reports side by side: step time, GB/s per kind, idle by cause (per step, or
// per second of run when a run has no steps, so that a longer run does not look worse), overlap and
// busbw per collective.
type Comparison struct {
	A    string `json:"a"`
	B    string `json:"b"`
	Rows []Row  `json:"rows"`
	// Warnings say what makes the runs compare less than like for like: their step counts,
	// device counts, hosts or workloads differ.
	Warnings []string `json:"warnings"`
	// Notes say how B was made, when it is a prediction (what-if): the method, what it kept
	// measured, how steps were found.
	Notes []string `json:"notes,omitempty"`
	// Command is the command that compared ("compare" when empty; "whatif").
	Command string `json:"command,omitempty"`
	// NoiseFloorPct, when set, is the relative change within which no row gets a verdict, and
	// NoiseFloorWhy what it is made of; Verdict is the comparison's answer on step time.
	NoiseFloorPct *float64 `json:"noise_floor_pct,omitempty"`
	NoiseFloorWhy string   `json:"noise_floor_why,omitempty"`
	Verdict       string   `json:"verdict,omitempty"`
	// SteadyStepsA and SteadyStepsB are each run's steps after the first, the steps SteadyRow is
	// of: the verdict wants two or more in each.
	SteadyStepsA, SteadyStepsB int64 `json:"-"`
}

// SteadyRow is the name of the row of the mean step time after the first step: the comparison's
// verdict rests on it (a shorter first step alone, warming up, moves the plain mean).
const SteadyRow = "step time mean after the first"

func ns(p *int64) *float64 {
	if p == nil {
		return nil
	}
	v := float64(*p)
	return &v
}

func row(section, name string, u Unit, a, b *float64, lessIsBetter bool) Row {
	r := Row{Section: section, Name: name, Unit: u, A: a, B: b}
	if a == nil || b == nil {
		return r
	}
	d := *b - *a
	r.Diff = &d
	if *a != 0 {
		p := round2(100 * d / *a)
		if cell(a, u) == cell(b, u) {
			p = 0 // 0.0% → 0.0% is no change, whatever the digits the cells do not show (+200%)
		}
		r.DiffPct = &p
	}
	// A change the cells do not show (0.01% → 0: both read 0.0%) is neither better nor worse.
	if d != 0 && cell(a, u) != cell(b, u) {
		better := (d < 0) == lessIsBetter
		r.Better = &better
	}
	return r
}

func round2(x float64) float64 {
	if x < 0 {
		return -round2(-x)
	}
	return float64(int64(x*100+0.5)) / 100
}

// Compare lays a and b side by side, labelled la and lb.
func Compare(a, b *Report, la, lb string) *Comparison {
	c := &Comparison{A: la, B: lb, Warnings: []string{}}
	add := func(r Row) { c.Rows = append(c.Rows, r) }
	add(row("steps", "step time p50", UnitNs, ns(a.Steps.P50Ns), ns(b.Steps.P50Ns), true))
	add(row("steps", "step time mean", UnitNs, ns(a.Steps.MeanNs), ns(b.Steps.MeanNs), true))
	add(row("steps", "step time p99", UnitNs, ns(a.Steps.P99Ns), ns(b.Steps.P99Ns), true))
	if a.Steps.Count > 0 || b.Steps.Count > 0 {
		add(row("steps", SteadyRow, UnitNs, ns(a.Steps.SteadyMeanNs), ns(b.Steps.SteadyMeanNs), true))
		c.SteadyStepsA, c.SteadyStepsB = max(a.Steps.Count-1, 0), max(b.Steps.Count-1, 0)
	}
	for _, k := range timeline.TransferKinds {
		ka, kb := a.Transfers.ByKind[k], b.Transfers.ByKind[k]
		if ka.Count == 0 && kb.Count == 0 {
			continue
		}
		r := row("transfers", k+" GB/s", UnitGBps, ka.GBps, kb.GBps, false)
		r.AMin, r.AMax, r.BMin, r.BMax = ka.GBpsMin, ka.GBpsMax, kb.GBpsMin, kb.GBpsMax
		add(r)
	}
	// Idle totals grow with a run's length: they are compared per step (or per second). Per step,
	// only the idle time inside the steps counts (the first step's communicator setup and the time
	// outside steps are not a step's: 8 devices idle through a 0.9 s setup had made 8 steps of
	// 48 ms "918 ms idle per step"). A run's start (the pipeline filling) still weighs more per step
	// in a shorter run, so runs of different lengths get no verdict on them, only a warning.
	per, na, nb := perRun(a, b)
	sameLength := a.Steps.Count == b.Steps.Count
	if !sameLength {
		// The step figures too: the steps a run starts with (the pipeline filling) weigh more in
		// the shorter run's percentiles.
		for i := range c.Rows {
			if c.Rows[i].Section == "steps" {
				c.Rows[i].Better = nil
			}
		}
		c.Warnings = append(c.Warnings, fmt.Sprintf("the runs differ in length: A completed %s in %s, B %d in %s. Step times and idle "+
			"(compared %s) get no verdict: the start of a run weighs more in the shorter one; compare runs of as many steps", units.Counted(a.Steps.Count, "step"),
			units.Dur(a.DurationNs), b.Steps.Count, units.Dur(b.DurationNs), per))
	}
	shape := compareShape(a, b)
	c.Warnings = append(c.Warnings, shape.warnings...)
	if !slices.Equal(a.Faults, b.Faults) {
		// Why B differs, when one run had a fault injected: the recordings say so.
		c.Warnings = append(c.Warnings, fmt.Sprintf("the runs had different faults injected: A %s; B %s", faultList(a.Faults), faultList(b.Faults)))
	}
	sum := "(Σ devices)"
	if shape.perDevice {
		// Idle summed over 16 devices against 128 grows with the devices, not with anything a
		// run did better or worse: each run's is divided by its own device count.
		na, nb, sum = na*float64(a.Devices), nb*float64(b.Devices), "(per device)"
	}
	idle := func(name string, ta, tb *int64, errA, errB int64) {
		r := row("idle", name, UnitNs, overP(ta, na), overP(tb, nb), true)
		if !sameLength {
			r.Better = nil
		}
		// An estimate (stream gaps summed in time bins: IdleInSteps.StreamErrorNs) no further
		// from the other run's figure than the two may be off is no better or worse.
		if ta != nil && tb != nil && errA+errB > 0 && math.Abs(float64(*ta)/na-float64(*tb)/nb) <= float64(errA)/na+float64(errB)/nb {
			r.Better = nil
		}
		add(r)
	}
	inSteps := per == "per step"
	devA, devB := idleTotal(a), idleTotal(b)
	if inSteps {
		devA, devB = deviceInSteps(a), deviceInSteps(b)
	}
	idle("device idle "+per+" "+sum, devA, devB, 0, 0)
	errA, errB := streamErrorNs(a, inSteps), streamErrorNs(b, inSteps)
	for _, cause := range analysis.Causes() {
		ca, cb := causeNs(a, cause, inSteps), causeNs(b, cause, inSteps)
		if (ca == nil || *ca == 0) && (cb == nil || *cb == 0) {
			continue
		}
		name := "stream gaps " + per + ": " + cause.String()
		if shape.perDevice {
			name = "stream gaps " + per + " per device: " + cause.String()
		}
		idle(name, ca, cb, errA, errB)
	}
	add(row("overlap", "communication overlapped with compute", UnitPct, a.Overlap.CommComputePct, b.Overlap.CommComputePct, false))
	for _, p := range pairCollectives(a.Collectives, b.Collectives) {
		x, y := p[0], p[1] // a row for each collective either run ran, even with its busbw unknown
		var bwA, bwB *float64
		if x != nil {
			bwA = x.BusBW
		}
		if y != nil {
			bwB = y.BusBW
		}
		add(row("collectives", collName(x, y), UnitGBps, bwA, bwB, false))
	}
	if !shape.sameWorkload {
		for i := range c.Rows {
			c.Rows[i].Better = nil // a different workload's figures are no better or worse
		}
	}
	return c
}

// shape is how two runs differ in size and workload, and what the comparison makes of it.
type shape struct {
	warnings     []string
	perDevice    bool // the device counts differ (both known): totals over devices are divided by each run's
	sameWorkload bool // no verdict at all when the runs ran different scenarios
}

// compareShape warns when two runs are not of one size or workload: their device counts, hosts or
// scenarios differ. A comparison of 16 GPUs against 128 had called B's idle, summed over its 128
// devices, 6388% worse.
func compareShape(a, b *Report) shape {
	s := shape{sameWorkload: true}
	if a.Devices > 0 && b.Devices > 0 && a.Devices != b.Devices {
		s.perDevice = true
		s.warnings = append(s.warnings, fmt.Sprintf("the runs differ in size: A has %s, B %d. Idle is compared per device "+
			"(each run's total divided by its own devices), not summed over them", units.Counted(int64(a.Devices), "device"), b.Devices))
	}
	if ha, hb := hosts(a), hosts(b); ha > 0 && hb > 0 && ha != hb {
		s.warnings = append(s.warnings, fmt.Sprintf("the runs differ in hosts: A ran on %s, B on %d; traffic between hosts crosses NICs in one and not "+
			"(or less) in the other", units.Counted(int64(ha), "host"), hb))
	}
	if a.Scenario != "" && b.Scenario != "" && a.Scenario != b.Scenario {
		s.sameWorkload = false
		s.warnings = append(s.warnings, fmt.Sprintf("the runs ran different workloads: A %q, B %q. No figure is called better or worse", a.Scenario, b.Scenario))
	}
	return s
}

// hosts is the number of hosts a run's devices were on, 0 when unknown.
func hosts(r *Report) int {
	if r.GPUsPerHost <= 0 || r.Devices <= 0 {
		return 0
	}
	return (r.Devices + r.GPUsPerHost - 1) / r.GPUsPerHost
}

// causeNs is a run's stream gaps put down to cause (inside its steps: inSteps), nil where its
// analysis cannot tell that cause (a trace's gaps are split as Holistic Trace Analysis does: it
// records no waits) or the time inside its steps is unknown.
func causeNs(r *Report, cause analysis.Cause, inSteps bool) *int64 {
	if !cause.KnownIn(timeline.ParseIdleMode(r.IdleMode)) || r.Idle.Unknown != "" {
		return nil
	}
	by := r.Idle.ByCause
	if inSteps {
		if r.Idle.InSteps == nil {
			return nil
		}
		by = r.Idle.InSteps.ByCause
	}
	v := by[cause.String()]
	return &v
}

// faultList is a run's injected faults as a warning names them.
func faultList(fs []string) string {
	if len(fs) == 0 {
		return "none"
	}
	return strings.Join(fs, ", ")
}

// streamErrorNs is how far a run's stream gaps inside its steps may be from exact (inSteps), 0
// when they are exact or the figure is not inside the steps.
func streamErrorNs(r *Report, inSteps bool) int64 {
	if !inSteps || r.Idle.InSteps == nil {
		return 0
	}
	return r.Idle.InSteps.StreamErrorNs
}

// idleTotal is a run's device idle time, nil when unknown (a source that records no kernels).
func idleTotal(r *Report) *int64 {
	if r.Idle.Unknown != "" {
		return nil
	}
	return &r.Idle.TotalNs
}

// deviceInSteps is a run's device idle time inside its steps, nil when unknown.
func deviceInSteps(r *Report) *int64 {
	if r.Idle.InSteps == nil {
		return nil
	}
	return &r.Idle.InSteps.DeviceNs
}

// overP is over of *v, nil when v is.
func overP(v *int64, n float64) *float64 {
	if v == nil {
		return nil
	}
	return over(*v, n)
}

// perRun says what the idle totals are divided by, so that runs of different lengths compare:
// steps when both runs completed some, else seconds of run; and each run's divisor.
func perRun(a, b *Report) (per string, na, nb float64) {
	if a.Steps.Count > 0 && b.Steps.Count > 0 {
		return "per step", float64(a.Steps.Count), float64(b.Steps.Count)
	}
	return "per second of run", float64(a.DurationNs) / 1e9, float64(b.DurationNs) / 1e9
}

// over is total / n, unknown when n is not positive.
func over(total int64, n float64) *float64 {
	if n <= 0 {
		return nil
	}
	v := float64(total) / n
	return &v
}

type collKey struct {
	op    string
	ranks int
	class int64
}

// pairCollectives pairs the collective rows of two reports: rows of the same op, ranks, size class
// and NCCL algorithm/protocol; then, where an op, ranks and size class is left with one row on
// each side (the runs chose different algorithms), those two. A row left over has no partner (nil):
// the other run did not run it. Pairs come in the rows' order (op, ranks, size, algo_proto).
func pairCollectives(a, b []analysis.Collective) [][2]*analysis.Collective {
	type full struct {
		collKey
		ap string
	}
	inB := map[full]int{}
	for i, y := range b {
		inB[full{collKey{y.Op, y.Ranks, y.SizeClass}, y.AlgoProto}] = i
	}
	var pairs [][2]*analysis.Collective
	usedB := make([]bool, len(b))
	var leftA []int
	for i := range a {
		if j, ok := inB[full{collKey{a[i].Op, a[i].Ranks, a[i].SizeClass}, a[i].AlgoProto}]; ok {
			pairs, usedB[j] = append(pairs, [2]*analysis.Collective{&a[i], &b[j]}), true
			continue
		}
		leftA = append(leftA, i)
	}
	restB := map[collKey][]int{}
	for j := range b {
		if !usedB[j] {
			k := collKey{b[j].Op, b[j].Ranks, b[j].SizeClass}
			restB[k] = append(restB[k], j)
		}
	}
	restA := map[collKey]int{}
	for _, i := range leftA {
		restA[collKey{a[i].Op, a[i].Ranks, a[i].SizeClass}]++
	}
	for _, i := range leftA {
		k := collKey{a[i].Op, a[i].Ranks, a[i].SizeClass}
		if js := restB[k]; restA[k] == 1 && len(js) == 1 {
			pairs, usedB[js[0]] = append(pairs, [2]*analysis.Collective{&a[i], &b[js[0]]}), true
			continue
		}
		pairs = append(pairs, [2]*analysis.Collective{&a[i], nil})
	}
	for j := range b {
		if !usedB[j] {
			pairs = append(pairs, [2]*analysis.Collective{nil, &b[j]})
		}
	}
	slices.SortStableFunc(pairs, func(p, q [2]*analysis.Collective) int {
		x, y := cmp.Or(p[0], p[1]), cmp.Or(q[0], q[1])
		return cmp.Or(cmp.Compare(x.Op, y.Op), cmp.Compare(x.Ranks, y.Ranks), cmp.Compare(x.SizeClass, y.SizeClass), cmp.Compare(x.AlgoProto, y.AlgoProto))
	})
	return pairs
}

// collName names a pair's row: op, ranks, size class, and the algorithm/protocol each run chose
// ("Ring_LL128", or "Ring_LL128 → Tree_LL128" when they differ).
func collName(x, y *analysis.Collective) string {
	c := cmp.Or(x, y)
	// 0: not recorded (an imported NCCL kernel), said in words rather than as "×— ≤—".
	var name string
	switch {
	case c.Ranks > 0 && c.SizeClass > 0:
		name = fmt.Sprintf("%s ×%d ≤%s", c.Op, c.Ranks, units.Bytes(c.SizeClass))
	case c.Ranks > 0:
		name = fmt.Sprintf("%s ×%d (size unknown)", c.Op, c.Ranks)
	case c.SizeClass > 0:
		name = fmt.Sprintf("%s (ranks unknown) ≤%s", c.Op, units.Bytes(c.SizeClass))
	default:
		name = fmt.Sprintf("%s (ranks and size unknown)", c.Op)
	}
	switch {
	case x != nil && y != nil && x.AlgoProto != y.AlgoProto:
		name += " " + cmp.Or(x.AlgoProto, units.Unknown) + " → " + cmp.Or(y.AlgoProto, units.Unknown)
	case c.AlgoProto != "":
		name += " " + c.AlgoProto
	}
	return name + " busbw"
}

func cell(v *float64, u Unit) string {
	if v == nil {
		return units.Unknown
	}
	switch u {
	case UnitNs:
		return units.Dur(int64(*v))
	case UnitGBps:
		return units.GBpsFigure(*v) + " GB/s"
	}
	return fmt.Sprintf("%.1f%%", *v)
}

// Cells formats the row for people, as the text comparison and the console's compare view both
// show it: A and B in the row's unit, B − A with its sign (− for less), the relative change, and
// "better" or "worse" ("" when neither).
func (r Row) Cells() (a, b, diff, pct, verdict string) {
	diff, pct = units.Unknown, units.Unknown
	if r.Diff != nil {
		sign := "+"
		if *r.Diff < 0 {
			sign = "−"
		}
		abs := *r.Diff
		if abs < 0 {
			abs = -abs
		}
		diff = sign + cell(&abs, r.Unit)
		if r.Unit == UnitPct {
			diff = fmt.Sprintf("%s%.1f pts", sign, abs)
		}
	}
	if r.DiffPct != nil {
		// The same minus as B − A's, so a column of changes reads alike.
		pct = strings.Replace(fmt.Sprintf("%+.1f%%", *r.DiffPct), "-", "−", 1)
	}
	if r.Better != nil {
		verdict = "worse"
		if *r.Better {
			verdict = "better"
		}
	}
	if r.NotReproduced {
		pct, verdict = "not reproduced", ""
	}
	return bounded(r.A, r.AMin, r.AMax, r.Unit), bounded(r.B, r.BMin, r.BMax, r.Unit), diff, pct, verdict
}

// bounded is a figure's cell, or its bounds as the text report gives them (units.GBpsBounds)
// when only they are known.
func bounded(v, lo, hi *float64, u Unit) string {
	if v == nil && lo != nil {
		return units.GBpsBounds(lo, hi) + " " + string(u)
	}
	return cell(v, u)
}

// padRight pads s with spaces to w display columns.
func padRight(s string, w int) string {
	return s + strings.Repeat(" ", max(0, w-ansi.StringWidth(s)))
}

// CompareText writes the comparison for people: each figure in A and B, B − A with its sign and
// relative change, and whether that is better or worse.
func CompareText(w io.Writer, c *Comparison) error {
	var b strings.Builder
	fmt.Fprintf(&b, "xfertop %s\n  A: %s\n  B: %s\n", cmp.Or(c.Command, "compare"), c.A, c.B)
	for _, w := range c.Warnings {
		fmt.Fprintf(&b, "  WARNING: %s\n", w)
	}
	for _, n := range c.Notes {
		fmt.Fprintf(&b, "  %s\n", n)
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	// Names are padded here so that they read left-aligned in the right-aligned table: to the
	// widest name's display width (a collective's "→" and "×" are one column, three bytes), so
	// that a long one does not push the others right.
	nameW := 44
	for _, r := range c.Rows {
		nameW = max(nameW, ansi.StringWidth("  "+r.Name))
	}
	fmt.Fprintf(tw, "%s\tA\tB\tB − A\tchange\t\t\n", padRight("", nameW))
	section := ""
	for _, r := range c.Rows {
		if r.Section != section {
			section = r.Section
			fmt.Fprintf(tw, "%s\t\t\t\t\t\t\n", padRight(section, nameW))
		}
		ca, cb, diff, pct, verdict := r.Cells()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", padRight("  "+r.Name, nameW), ca, cb, diff, pct, verdict)
	}
	tw.Flush()
	if c.NoiseFloorPct != nil {
		fmt.Fprintf(&b, "\nnoise floor: ±%.1f%% (%s)\n", *c.NoiseFloorPct, c.NoiseFloorWhy)
	}
	if f := rowFloors(c); len(f) > 0 {
		fmt.Fprintf(&b, "rows with a floor of their own (the unchanged replay's change on them): %s\n", strings.Join(f, "; "))
	}
	if f := notReproduced(c); len(f) > 0 {
		fmt.Fprintf(&b, "rows not reproduced by the replay (the unchanged replay alone moves them by more than %.0f%%: no prediction on them): %s\n", NotReproducedPct, strings.Join(f, "; "))
	}
	if c.Verdict != "" {
		fmt.Fprintf(&b, "verdict: %s\n", c.Verdict)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
