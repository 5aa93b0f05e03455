package campaign

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// Row is one fault kind's scores.
type Row struct {
	Kind         string
	Trials       int
	Undetectable int // changed nothing measurable
	Detectable   int
	Top1         int // the top finding named the culprit (of the detectable)
	KindRight    int // ... and its kind
	HostRight    int // the top finding named the culprit's host
	Big          int // detectable trials that slowed the run by 5% or more (or hung)
	BigTop1      int
	Found        int // any finding
	FalseFind    int // findings naming another place
	// Latency of the right findings: median and 90th percentile, simulated ns and steps.
	LatP50, LatP90     int64
	StepsP50, StepsP90 int
}

// Summary is a campaign's table: per kind, then every fault, then the healthy runs.
type Summary struct {
	Rows           []Row
	All            Row
	HealthyRuns    int
	HealthyFalse   int // findings on healthy runs
	HealthyFlagged int // healthy runs with any finding
}

// Summarize scores trials.
func Summarize(trials []Trial) Summary {
	var s Summary
	byKind := map[string]*Row{}
	var lat = map[string][]int64{}
	var steps = map[string][]int{}
	for i := range trials {
		t := &trials[i]
		if t.Fault == nil {
			s.HealthyRuns++
			s.HealthyFalse += t.False
			if t.False > 0 {
				s.HealthyFlagged++
			}
			continue
		}
		k := t.Fault.Kind.String()
		for _, name := range []string{k, "all"} {
			r := byKind[name]
			if r == nil {
				r = &Row{Kind: name}
				byKind[name] = r
			}
			r.Trials++
			if !t.Detectable {
				r.Undetectable++
				continue
			}
			r.Detectable++
			big := t.Ended != nil || t.Slowdown >= 0.05
			if big {
				r.Big++
			}
			if t.Found {
				r.Found++
			}
			r.FalseFind += t.False
			if t.Culprit {
				r.Top1++
				if big {
					r.BigTop1++
				}
				lat[name] = append(lat[name], t.LatencyNs)
				steps[name] = append(steps[name], t.LatencySteps)
			}
			if t.KindRight {
				r.KindRight++
			}
			if t.HostRight {
				r.HostRight++
			}
		}
	}
	for name, r := range byKind {
		r.LatP50, r.LatP90 = pct(lat[name])
		r.StepsP50, r.StepsP90 = pctInt(steps[name])
		if name == "all" {
			s.All = *r
		} else {
			s.Rows = append(s.Rows, *r)
		}
	}
	order := map[string]int{}
	for i, k := range DefaultKinds {
		order[k.String()] = i
	}
	slices.SortFunc(s.Rows, func(a, b Row) int { return order[a.Kind] - order[b.Kind] })
	return s
}

func pct(xs []int64) (p50, p90 int64) {
	if len(xs) == 0 {
		return -1, -1
	}
	slices.Sort(xs)
	return xs[(len(xs)-1)/2], xs[(len(xs)*9+9)/10-1]
}

func pctInt(xs []int) (p50, p90 int) {
	if len(xs) == 0 {
		return -1, -1
	}
	slices.Sort(xs)
	return xs[(len(xs)-1)/2], xs[(len(xs)*9+9)/10-1]
}

func frac(a, b int) string {
	if b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f%% (%d/%d)", 100*float64(a)/float64(b), a, b)
}

func secs(ns int64) string {
	if ns < 0 {
		return "—"
	}
	return fmt.Sprintf("%.3f s", float64(ns)/1e9)
}

func stepsStr(n int) string {
	if n < 0 {
		return "—"
	}
	return fmt.Sprint(n)
}

// Print writes the table.
func (s Summary) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kind\ttrials\tundetectable\ttop-1 culprit\tkind right\thost right\ttop-1 at ≥5% slowdown\tfalse findings\tonset→finding p50\tp90\tsteps p50\tp90\t")
	rows := append(append([]Row(nil), s.Rows...), s.All)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t\n", r.Kind, r.Trials, r.Undetectable,
			frac(r.Top1, r.Detectable), frac(r.KindRight, r.Detectable), frac(r.HostRight, r.Detectable), frac(r.BigTop1, r.Big), r.FalseFind,
			secs(r.LatP50), secs(r.LatP90), stepsStr(r.StepsP50), stepsStr(r.StepsP90))
	}
	tw.Flush()
	fmt.Fprintf(w, "healthy runs: %d, with any finding: %d (%d findings)\n", s.HealthyRuns, s.HealthyFlagged, s.HealthyFalse)
}
