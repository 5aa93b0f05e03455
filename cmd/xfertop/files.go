package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/xfertop/xfertop/analysis"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/recordings/trace"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/session"
	"github.com/xfertop/xfertop/timeline"
)

// parseInterspersed parses flags that may come before or after the positional arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func replayCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("xfertop replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	speed := fs.Float64("speed", 0, "replay at this many recorded seconds per wall second (0: as fast as possible)")
	from := fs.Duration("from", 0, "start at this time into the recording")
	headless := fs.Bool("headless", false, "print a report instead of opening the console")
	tick := fs.Duration("tick", 60*time.Millisecond, "console: how often the view refreshes")
	window := fs.Int("window", timeline.DefaultWindow, "console: events kept in memory")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	salvage := fs.Bool("salvage", false, "skip damaged chunks instead of stopping at the first")
	var otlp otlpFlags
	otlp.register(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "xfertop replay: give one recording: xfertop replay FILE.xfr [--speed X] [--from T] [--headless [--json]]")
		return exitUsage
	}
	if *speed < 0 || *from < 0 {
		fmt.Fprintln(stderr, "xfertop replay: --speed and --from must not be negative")
		return exitUsage
	}
	exp, err := otlp.config()
	if err != nil {
		fmt.Fprintf(stderr, "xfertop replay: %v\n", err)
		return exitUsage
	}
	if !*headless {
		if interactive(stdout) {
			if !flagSet(fs, "speed") {
				*speed = 1
			}
			return replayConsole(ctx, session.ReplayConfig{Path: pos[0], Speed: *speed, From: *from, Salvage: *salvage},
				consoleOpts{tick: *tick, window: *window}, stderr)
		}
		fmt.Fprintln(stderr, "xfertop: standard output is not a terminal: printing the headless report (use --headless to say so)")
	}
	return replayReport(ctx, session.ReplayConfig{Path: pos[0], Speed: *speed, From: *from, Salvage: *salvage, Export: exp}, *asJSON, stdout, stderr)
}

// replayReport reads a recording back and prints its report, with the warnings on standard error.
func replayReport(ctx context.Context, cfg session.ReplayConfig, asJSON bool, stdout, stderr io.Writer) int {
	rp, err := session.Replay(ctx, cfg)
	if rp != nil {
		for _, w := range rp.Warnings {
			fmt.Fprintf(stderr, "xfertop: warning: %s\n", w)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "xfertop: %v\n", err)
		if errors.Is(err, session.ErrNoEvents) {
			return exitData
		}
		return exitUsage
	}
	return writeReport(stdout, stderr, rp.Report(), asJSON)
}

// isRecording reports whether path starts with the .xfr magic.
func isRecording(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	head := make([]byte, len(recordings.Magic))
	n, _ := io.ReadFull(f, head)
	return n == len(head) && string(head) == recordings.Magic, nil
}

func analyzeCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("xfertop analyze", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	likeHTA := fs.Bool("like-hta", false, "analyse only what Holistic Trace Analysis does by default: GPU ops launched during ProfilerStep#N, the last step excluded")
	salvage := fs.Bool("salvage", false, "skip damaged chunks of a recording")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if len(pos) == 0 {
		fmt.Fprintln(stderr, "xfertop analyze: give a recording (.xfr), or one or more trace files (.json, .json.gz; one per rank)")
		return exitUsage
	}
	rec, err := isRecording(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "xfertop analyze: %v\n", err)
		return exitUsage
	}
	if rec {
		if len(pos) > 1 {
			fmt.Fprintln(stderr, "xfertop analyze: give one recording at a time")
			return exitUsage
		}
		return replayReport(context.Background(), session.ReplayConfig{Path: pos[0], Salvage: *salvage}, *asJSON, stdout, stderr)
	}
	im, err := trace.ReadFiles(pos, trace.Options{LikeHTA: *likeHTA})
	if err != nil {
		fmt.Fprintf(stderr, "xfertop: %v\n", err)
		return exitUsage
	}
	if len(im.Events) == 0 {
		fmt.Fprintf(stderr, "xfertop analyze: %s: no events\n", strings.Join(pos, ", "))
		return exitData
	}
	m := importedMeta(im)
	an := analysis.New(m)
	for i := range im.Events {
		an.Emit(&im.Events[i])
	}
	return writeReport(stdout, stderr, report.Build(an.Result(im.Strings), m, report.Run{}), *asJSON)
}

// importedMeta describes an imported trace for the report. Traces carry no engine wait events, so
// idle time is split as Holistic Trace Analysis does.
func importedMeta(im *trace.Imported) timeline.Meta {
	m := timeline.Meta{Source: im.Source, Backend: im.Format, Topology: "unknown", Devices: im.Devices, IdleMode: timeline.IdleHTA,
		KernelWaitNs: analysis.DefaultKernelWaitNs, EpochUnixNs: im.EpochUnixNs, Writer: session.Writer}
	if im.Exported != nil {
		x := im.Exported
		m.Scenario, m.Backend, m.Topology = x["scenario"], x["backend"], x["topology"]
		m.Devices, _ = strconv.Atoi(x["devices"])
		m.Seed, _ = strconv.ParseInt(x["seed"], 10, 64)
		if x["idle_mode"] != "hta" {
			m.IdleMode = timeline.IdleEngine
		}
	}
	return m
}

func convertCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) != 2 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintln(stderr, "xfertop convert: usage: xfertop convert IN OUT  (IN.xfr -> OUT.json, or IN.json[.gz] -> OUT.xfr)")
		return exitUsage
	}
	in, out := args[0], args[1]
	rec, err := isRecording(in)
	if err != nil {
		fmt.Fprintf(stderr, "xfertop convert: %v\n", err)
		return exitUsage
	}
	if rec {
		if !strings.HasSuffix(out, ".json") {
			fmt.Fprintf(stderr, "xfertop convert: %s is a recording; write it to a .json file (Chrome trace), not %q\n", in, out)
			return exitUsage
		}
		r, err := recordings.ReadFile(in, recordings.Options{})
		if err != nil {
			fmt.Fprintf(stderr, "xfertop: %v\n", err)
			return exitUsage
		}
		for _, w := range r.Warnings {
			fmt.Fprintf(stderr, "xfertop: warning: %s\n", w)
		}
		f, err := os.Create(out)
		if err != nil {
			fmt.Fprintf(stderr, "xfertop convert: %v\n", err)
			return exitFailure
		}
		meta := map[string]string{}
		for _, kv := range recordings.MetaPairs(r.Meta) {
			meta[kv[0]] = kv[1]
		}
		if err := trace.WriteChrome(f, r.Events, r.Strings, meta); err != nil {
			f.Close()
			fmt.Fprintf(stderr, "xfertop convert: %s: %v\n", out, err)
			return exitFailure
		}
		if err := f.Close(); err != nil {
			fmt.Fprintf(stderr, "xfertop convert: %s: %v\n", out, err)
			return exitFailure
		}
		fmt.Fprintf(stdout, "wrote %s: %d events as Chrome trace JSON (open it in Perfetto or chrome://tracing)\n", out, len(r.Events))
		return exitOK
	}
	if !strings.HasSuffix(out, ".xfr") {
		fmt.Fprintf(stderr, "xfertop convert: %s is a trace; write it to a .xfr recording, not %q\n", in, out)
		return exitUsage
	}
	im, err := trace.ReadFiles([]string{in}, trace.Options{})
	if err != nil {
		fmt.Fprintf(stderr, "xfertop: %v\n", err)
		return exitUsage
	}
	if err := writeImported(out, im); err != nil {
		fmt.Fprintf(stderr, "xfertop convert: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "wrote %s: %d events from %s (%s)\n", out, len(im.Events), in, im.Format)
	return exitOK
}

// writeImported writes an imported trace as a recording.
func writeImported(path string, im *trace.Imported) error {
	w, err := recordings.Create(path)
	if err != nil {
		return err
	}
	if err := w.WriteMeta(importedMeta(im)); err != nil {
		return err
	}
	if err := w.WriteStrings(1, im.Strings.All()[1:]); err != nil {
		return err
	}
	for i := 0; i < len(im.Events); i += recordings.DefaultBatch {
		if err := w.WriteEvents(im.Events[i:min(i+recordings.DefaultBatch, len(im.Events))]); err != nil {
			return err
		}
	}
	if err := w.WriteOutcome([][2]string{{"imported_at", time.Now().UTC().Format(time.RFC3339)}}); err != nil {
		return err
	}
	return w.Close()
}
