package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"strings"

	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/session"
)

// compareCmd lays the reports of two recordings or traces side by side.
func compareCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("xfertop compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	setUsage(fs, "xfertop compare A B [flags]  (two recordings or traces; or: xfertop run --compare knob=a,b)")
	asJSON := fs.Bool("json", false, "print the comparison as JSON")
	var limits importLimits
	limits.register(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagError(fs, err)
	}
	if len(pos) != 2 {
		return usageError("give two recordings or traces to compare")
	}
	var reps [2]*report.Report
	for i, p := range pos {
		if reps[i], err = fileReport(ctx, p, limits, stderr); err != nil {
			return err
		}
	}
	return writeComparison(stdout, report.Compare(reps[0], reps[1], pos[0], pos[1]), *asJSON)
}

// fileReport analyses one recording or trace file, as analyze does.
func fileReport(ctx context.Context, path string, limits importLimits, stderr io.Writer) (*report.Report, error) {
	if err := inputFile(path, "a recording or a trace"); err != nil {
		return nil, err
	}
	if _, err := isRecording(path); err != nil {
		return nil, failure(err) // as it always was: the format told before anything is read
	}
	opts := limits.options(false)
	opts.Context = ctx
	rep, _, err := inputReport([]string{path}, opts, stderr)
	return rep, err
}

// compareRuns runs the scenario twice, with knob=a and knob=b and the same seed, headless, and
// compares them.
func compareRuns(ctx context.Context, o *runOpts, spec string, stdout io.Writer) error {
	knob, vals, ok := strings.Cut(spec, "=")
	a, b, ok2 := strings.Cut(vals, ",")
	if !ok || !ok2 || knob == "" || a == "" || b == "" || strings.Contains(b, ",") {
		return usageError("--compare %q: give knob=a,b (for instance d2d_priority=high,normal)", spec)
	}
	var reps [2]*report.Report
	for i, v := range []string{a, b} {
		cfg := o.cfg
		cfg.Sets = maps.Clone(o.cfg.Sets)
		cfg.Sets[knob] = v
		cfg.Record, cfg.Export = "", nil
		p, err := session.Prepare(cfg)
		if err != nil {
			return prepareError(err)
		}
		out, err := p.Run(ctx)
		if err != nil {
			return err
		}
		if err := runEnded(out, nil); err != nil {
			return err
		}
		reps[i] = p.Report(out)
	}
	c := report.Compare(reps[0], reps[1], knob+"="+a, knob+"="+b)
	return writeComparison(stdout, c, o.json)
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
