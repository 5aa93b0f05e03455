package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"strings"

	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/scenario"
	"github.com/xfertop/xfertop/session"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui"
	"github.com/xfertop/xfertop/ui/views/compare"
	"github.com/xfertop/xfertop/units"
)

// compareCmd lays the reports of two recordings or traces side by side.
func compareCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("xfertop compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	setUsage(fs, "xfertop compare A B [flags]  (two recordings or traces; or: xfertop run --compare knob=a,b)")
	asJSON := fs.Bool("json", false, "print the comparison as JSON")
	headless := fs.Bool("headless", false, "print the comparison instead of opening the console")
	var limits importLimits
	limits.register(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagError(fs, err, stdout)
	}
	if len(pos) != 2 {
		return usageError("give two recordings or traces to compare")
	}
	if sameFile(pos[0], pos[1]) {
		return dataError(fmt.Errorf("%s and %s are the same file: give two runs to compare", pos[0], pos[1]))
	}
	var reps [2]*report.Report
	var wins [2]*timeline.Window
	for i, p := range pos {
		wins[i] = timeline.NewWindow(compareWindow, nil)
		if reps[i], err = fileReport(ctx, p, limits, stderr, wins[i]); err != nil {
			return err
		}
	}
	c := report.Compare(reps[0], reps[1], pos[0], pos[1])
	if !*asJSON && !*headless && interactive(stdout) {
		return compareConsole(ctx, compareData(c, wins))
	}
	return writeComparison(stdout, c, *asJSON)
}

// compareWindow is how many events of each run the compare console keeps for its timelines: the
// latest; the steps among them are the ones it can align.
const compareWindow = 1 << 20

// compareData is what the compare console shows: the comparison and each run's events.
func compareData(c *report.Comparison, wins [2]*timeline.Window) compare.Data {
	d := compare.Data{Cmp: c}
	for i, w := range wins {
		d.Runs[i] = compare.Run{Label: []string{c.A, c.B}[i], Snap: w.Snapshot()}
	}
	return d
}

// compareConsole shows a comparison in the console until the user quits.
func compareConsole(ctx context.Context, d compare.Data) error {
	if err := runProgram(ctx, ui.NewCompare(d, ui.Options{IsDark: darkTerminal()})); err != nil && ctx.Err() == nil {
		return failure(fmt.Errorf("console: %w", err))
	}
	return nil
}

// fileReport analyses one recording or trace file, or a directory of one job's per-rank files
// (recordings, NCCL Inspector logs, Flight Recorder dumps), as analyze does; also get its events.
func fileReport(ctx context.Context, path string, limits importLimits, stderr io.Writer, also ...timeline.Sink) (*report.Report, error) {
	paths, err := rankInputs(ctx, []string{path})
	if err != nil {
		return nil, err
	}
	if err := refuseNCCLTestsLogs(paths); err != nil {
		return nil, err
	}
	if _, err := isRecording(paths[0]); err != nil {
		return nil, err // the format told before anything is read: unreadable 1, not a known format 4
	}
	opts := limits.options(false)
	opts.Context, opts.Source = ctx, givenSource([]string{path})
	rep, _, err := inputReport(paths, opts, stderr, also...)
	return rep, err
}

// compareRuns runs the scenario twice, with knob=a and knob=b and the same seed, unpaced, and
// compares them: in the console on a terminal, else (or with --headless or --json) as text or JSON.
func compareRuns(ctx context.Context, o *runOpts, spec string, stdout io.Writer) error {
	c, wins, err := runComparison(ctx, o, spec)
	if err != nil {
		return err
	}
	if !o.json && !o.headless && interactive(stdout) {
		return compareConsole(ctx, compareData(c, wins))
	}
	return writeComparison(stdout, c, o.json)
}

// runComparison runs both variants of spec (knob=a,b) and compares their reports; each run's
// latest events are kept in a window for the console's timelines.
func runComparison(ctx context.Context, o *runOpts, spec string) (*report.Comparison, [2]*timeline.Window, error) {
	var wins [2]*timeline.Window
	knob, vals, ok := strings.Cut(spec, "=")
	a, b, ok2 := strings.Cut(vals, ",")
	if !ok || !ok2 || knob == "" || a == "" || b == "" || strings.Contains(b, ",") {
		return nil, wins, usageError("--compare %q: give knob=a,b (for instance d2d_priority=high,normal)", spec)
	}
	var reps [2]*report.Report
	for i, v := range []string{a, b} {
		cfg := o.cfg
		cfg.Sets = maps.Clone(o.cfg.Sets)
		cfg.Sets[knob] = v
		cfg.Record, cfg.Export = "", nil
		wins[i] = timeline.NewWindow(compareWindow, nil)
		p, err := session.Prepare(cfg, wins[i])
		var se *scenario.SetError
		if errors.As(err, &se) && se.Knob == knob && se.Value == v {
			se.Flag = "--compare" // the value is one side of --compare, not a --set
			if strings.HasPrefix(se.Msg, "unknown knob") {
				// Not one value's fault: the flag is echoed as given (it said "--compare nosuch=1"
				// of --compare nosuch=1,2). A bad value is named alone, as the message is its.
				se.Value = vals
			}
		}
		if err != nil {
			return nil, wins, prepareError(err)
		}
		out, err := p.Run(ctx)
		if err != nil {
			return nil, wins, err
		}
		if err := runEnded(out, nil, nil); err != nil {
			return nil, wins, err
		}
		reps[i] = p.Report(out)
	}
	c := report.Compare(reps[0], reps[1], knob+"="+a, knob+"="+b)
	c.SetNoiseFloor(runNoiseFloor(wins))
	return c, wins, nil
}

// runNoiseFloor is the change within which run --compare gives no verdict, as whatif's: the larger
// of 1% and each run's step-time spread (the median absolute deviation of its steps' lengths over
// their median, each device's first step, which sets up, left out). One seed's two runs differ by
// the knob and by what the knob moves in the run's timing; a difference smaller than the steps'
// own spread is not told apart from that.
func runNoiseFloor(wins [2]*timeline.Window) (float64, string) {
	floor, spreads := 1.0, [2]string{}
	for i, w := range wins {
		spreads[i] = "unknown (no steps)"
		if w == nil {
			continue
		}
		snap := w.Snapshot()
		sp, steady, ok := stepSpread(snap.Events())
		switch {
		case ok:
			floor = max(floor, sp)
			spreads[i] = fmt.Sprintf("%.1f%%", sp)
		case steady >= 0:
			spreads[i] = fmt.Sprintf("unknown (%s after the first; the spread needs two)", units.Counted(steady, "step"))
		}
	}
	return floor, fmt.Sprintf("the larger of 1%% and the runs' step-time spread (median absolute deviation over median: A %s, B %s)", spreads[0], spreads[1])
}

// stepSpread is the median absolute deviation of the steps' lengths over their median, in percent,
// leaving each device's first step out; ok is false with fewer than two steps left, steady being
// how many were left (-1 with no steps at all).
func stepSpread(evs []timeline.Event) (spread float64, steady int, ok bool) {
	first := map[int32]int{}
	for i := range evs {
		e := &evs[i]
		if j, ok := first[e.Device]; e.Kind == timeline.KindStep && (!ok || e.Start < evs[j].Start) {
			first[e.Device] = i
		}
	}
	var lens []float64
	for i := range evs {
		if e := &evs[i]; e.Kind == timeline.KindStep && first[e.Device] != i {
			lens = append(lens, float64(e.End-e.Start))
		}
	}
	if len(first) == 0 {
		return 0, -1, false
	}
	if len(lens) < 2 {
		return 0, len(lens), false
	}
	med := median(lens)
	if med <= 0 {
		return 0, len(lens), false
	}
	for i := range lens {
		lens[i] = math.Abs(lens[i] - med)
	}
	return 100 * median(lens) / med, len(lens), true
}

func writeComparison(stdout io.Writer, c *report.Comparison, asJSON bool) error {
	var err error
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(c)
	} else {
		err = report.CompareText(stdout, c)
	}
	if err != nil {
		return failure(fmt.Errorf("write comparison: %w", err))
	}
	return nil
}

// sameFile reports whether two paths name one file (the same path, or a link to it). Copies are
// not refused: two runs of one seed write identical recordings, and comparing them is a check.
func sameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}
