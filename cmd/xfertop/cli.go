package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/otel"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/scenario"
	"github.com/xfertop/xfertop/session"
)

const usage = `xfertop: see which bytes move between which GPUs, how fast, and where devices wait.

Usage:
  xfertop [run] [flags]               run a scenario on the embedded engine in the console (--headless: print a report)
  xfertop replay FILE... [flags]      replay a recording (.xfr), traces or Nsight Systems exports in the console
                                      (--headless: print the report)
  xfertop listen [flags]              receive other hosts' xfertop over OTLP: one console (or report) for all
  xfertop analyze FILE... [flags]     report on a recording, PyTorch profiler (Kineto) or Chrome traces, or
                                      Nsight Systems exports (.sqlite, from nsys export --type sqlite);
                                      an nccl-tests log as a reference (--topology T: against the simulated sweep)
  xfertop nccl-tests OP [flags]       nccl-tests' sweep of OP (all_reduce, ...) simulated, in nccl-tests' columns
  xfertop convert IN OUT [flags]      .xfr -> Chrome trace JSON (Perfetto), or Kineto/Chrome JSON or Nsight .sqlite -> .xfr
  xfertop compare A B [flags]         two recordings or traces side by side (or: run --compare knob=a,b)
  xfertop whatif TRACE [flags]        replay a trace's dependency graph with one thing changed (--scale-kernel NAME=x,
                                      --comm algo=nvls, --topology T, --hosts N): predicted against measured
  xfertop attach [flags]              watch a training job live: its ranks' NCCL collectives and transfers
  xfertop plugin                      print the path of the NCCL profiler plugin attach needs (or how to build it)
  xfertop diagnose --campaign N       measure the diagnosis: N runs with one random fault each, plus healthy runs
  xfertop repair FILE                 cut a recording's torn or damaged tail to its last sound chunk (backup in FILE.bak)
  xfertop scenarios [NAME]            list built-in scenarios and their knobs, or print one's file to copy
  xfertop topologies [NAME]           list built-in topologies, or print one's file to copy and edit
  xfertop version                     print xfertop's version (also --version)
  xfertop help                        show this help

Run flags:
`

// xfertop runs the command line args and returns the exit status. Commands return errors; finish
// prints them and maps them to the status (exit.go).
func xfertop(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := "run"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	} else if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		cmd, args = "version", args[1:]
	}
	ctx, names := withInputNames(ctx)
	defer names.cleanup() // after a signal too: the command's goroutine may be left behind
	var err error
	switch cmd {
	case "run":
		err = runCmd(ctx, args, stdout, stderr)
	case "scenarios":
		err = scenariosCmd(args, stdout)
	case "topologies":
		err = topologiesCmd(args, stdout)
	case "replay":
		err = replayCmd(ctx, args, stdout, stderr)
	case "listen":
		err = listenCmd(ctx, args, stdout, stderr)
	case "analyze":
		err = untilInterrupted(ctx, func() error { return analyzeCmd(ctx, args, stdout, stderr) })
	case "convert":
		err = untilInterrupted(ctx, func() error { return convertCmd(ctx, args, stdout, stderr) })
	case "compare":
		err = untilInterrupted(ctx, func() error { return compareCmd(ctx, args, stdout, stderr) })
	case "whatif":
		err = untilInterrupted(ctx, func() error { return whatifCmd(ctx, args, stdout, stderr) })
	case "attach":
		err = attachCmd(ctx, args, stdout, stderr)
	case "nccl-tests":
		err = ncclTestsCmd(ctx, args, stdout, stderr)
	case "plugin":
		err = pluginCmd(args, stdout)
	case "repair":
		err = untilInterrupted(ctx, func() error { return repairCmd(args, stdout) })
	case "diagnose":
		err = diagnoseCmd(ctx, args, stdout, stderr)
	case "version":
		err = versionCmd(args, stdout)
	case "help":
		fmt.Fprint(stdout, usage)
		fs, _ := runFlags(stdout)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		fmt.Fprint(stdout, exitHelp)
	default:
		fmt.Fprintf(stderr, "xfertop: unknown command %q (commands: run, replay, listen, analyze, nccl-tests, convert, compare, whatif, attach, plugin, diagnose, repair, scenarios, topologies, version, help)\n", cmd)
		return exitUsage
	}
	return finish(ctx, cmd, err, stderr)
}

// setUsage makes the help of a command's flags (-h) say how to call it; flagError adds the exit
// statuses after it.
func setUsage(fs *flag.FlagSet, synopsis string) {
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
}

// isHelp reports whether args ask for help (-h, -help, --help).
func isHelp(args []string) bool {
	return len(args) == 1 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help")
}

// setFlag collects repeated --set key=value flags.
type setFlag map[string]string

func (s setFlag) String() string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k+"="+s[k])
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

func (s setFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", v)
	}
	s[strings.TrimSpace(k)] = strings.TrimSpace(val)
	return nil
}

type runOpts struct {
	cfg      session.Config
	headless bool
	json     bool
	text     textFlags
	record   string
	force    bool // --force-overwrite
	console  consoleOpts
	otlp     otlpFlags
	compare  string // knob=a,b
}

func runFlags(stderr io.Writer) (*flag.FlagSet, *runOpts) {
	o := &runOpts{cfg: session.Config{Sets: map[string]string{}}}
	fs := flag.NewFlagSet("xfertop run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	setUsage(fs, "xfertop [run] [flags]")
	fs.StringVar(&o.cfg.Scenario, "scenario", scenario.DefaultName, "built-in scenario name or path to a scenario file")
	fs.IntVar(&o.cfg.Steps, "steps", 0, "steps to run (0: the scenario's own)")
	fs.DurationVar(&o.cfg.Duration, "duration", 0, "stop after this much simulated time (0: no limit)")
	fs.Int64Var(&o.cfg.Seed, "seed", 1, "random seed; the same seed gives the same run")
	fs.Var(setFlag(o.cfg.Sets), "set", "set a scenario knob, key=value (repeatable)")
	fs.Var((*faultFlag)(&o.cfg.Faults), "fault", "inject a fault, kind=nic_slow,host=37,nic=3,factor=0.3,at=2s[,for=5s] (repeatable; docs/diagnosis.md)")
	fs.StringVar(&o.cfg.Topology, "topology", "", "built-in topology name (xfertop topologies lists them) or path to a topology file (default: the scenario's)")
	fs.IntVar(&o.cfg.Hosts, "hosts", 0, "scale the topology to this many hosts of its kind, e.g. --topology h100x8x2 --hosts 512 (0: the topology's own)")
	fs.StringVar(&o.cfg.Backend, "backend", "sim", "engine backend: sim, or cuda (real GPUs and NCCL; needs a build with -tags cuda)")
	fs.BoolVar(&o.cfg.Fit, "fit", false, "cuda: run a topology with more ranks than GPUs, rank r on GPU r mod n")
	fs.Float64Var(&o.cfg.Speed, "speed", 0, "pace the simulation: simulated seconds per wall second (0: as fast as possible; default 1 in the console, 0 headless)")
	fs.BoolVar(&o.headless, "headless", false, "print a report instead of opening the console")
	fs.BoolVar(&o.json, "json", false, "print the report as JSON instead of opening the console (implies --headless)")
	o.text.register(fs)
	fs.StringVar(&o.record, "record", "", "record the session to this .xfr file while it runs")
	registerForceOverwrite(fs, &o.force)
	fs.DurationVar(&o.console.tick, "tick", 60*time.Millisecond, "console: how often the view refreshes")
	fs.IntVar(&o.console.window, "window", 0, windowUsage)
	o.otlp.register(fs)
	fs.BoolVar(&o.cfg.NVML, "nvml", false, "sample GPU telemetry through NVML beside the run (utilisation, memory, PCIe, NVLink, power, clocks, temperature)")
	fs.DurationVar(&o.cfg.NVMLInterval, "nvml-interval", 500*time.Millisecond, "how often --nvml samples")
	fs.StringVar(&o.compare, "compare", "", "run the scenario twice, knob=a,b, with one seed, and compare the two (in the console; --headless or --json print it)")
	return fs, o
}

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, o := runFlags(stderr)
	if err := parseFlags(fs, args); err != nil {
		return flagError(fs, err, stdout)
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q", fs.Arg(0))
	}
	if err := checkSpeed(o.cfg.Speed); err != nil {
		return err
	}
	if o.cfg.Hosts < 0 {
		return usageError("--hosts %d: must be positive (0 keeps the topology's own)", o.cfg.Hosts)
	}
	if o.cfg.Steps < 0 {
		return usageError("--steps %d: must not be negative (0: the scenario's own)", o.cfg.Steps)
	}
	if o.cfg.Duration < 0 {
		return usageError("--duration %v: must not be negative", o.cfg.Duration)
	}
	if o.cfg.Fit && o.cfg.Backend != "cuda" {
		return usageError("--fit: only the cuda backend places ranks on fewer GPUs (--backend %s)", o.cfg.Backend)
	}
	if err := checkRecordTarget(o.record, o.force); err != nil {
		return err
	}
	o.cfg.Record = o.record
	exp, err := o.otlp.config()
	if err != nil {
		return usageError("%w", err)
	}
	o.cfg.Export = exp
	if err := o.console.check(); err != nil {
		return err
	}
	if err := o.text.check(); err != nil {
		return err
	}
	if o.cfg.NVMLInterval <= 0 {
		return usageError("--nvml-interval %v: must be positive", o.cfg.NVMLInterval)
	}
	if o.compare != "" {
		return compareRuns(ctx, o, o.compare, stdout)
	}
	o.headless = o.headless || o.json // --json asks for the report, which the console does not print
	if !o.headless {
		if interactive(stdout) {
			if !flagSet(fs, "speed") {
				o.cfg.Speed = 1 // a person watches in real time unless asked otherwise
			}
			return liveConsole(ctx, o.cfg, o.console, &o.otlp, stderr)
		}
		headlessNotice(stderr, stdout, "")
	}
	// A run that will take long says so when the simulator knows it, not only in the report.
	o.cfg.Warn = func(msg string) { fmt.Fprintf(stderr, "xfertop: warning: %s\n", msg) }
	p, err := session.Prepare(o.cfg)
	if err != nil {
		return prepareError(err)
	}
	// A paced run takes as long as it simulates: say how far it has got, where a person watches.
	stop := func() {}
	if o.cfg.Speed > 0 && isTerminal(stderr) {
		stop = showProgress(stderr, 500*time.Millisecond, p.Progress)
	}
	out, err := p.Run(ctx)
	stop()
	var re *session.RecordingError
	if err != nil && !errors.As(err, &re) {
		return err
	}
	// A recording that failed stopped the run: what ran is still reported.
	rep := p.Report(out)
	if err := writeReport(stdout, rep, o.json, o.text.options()); err != nil {
		return err
	}
	if err := runEnded(out, err, rep); err != nil {
		return err
	}
	return o.otlp.check(rep.Export, stderr)
}

// prepareError is the command's error for a run that could not be prepared.
func prepareError(err error) error {
	var re *session.RecordingError
	if errors.As(err, &re) {
		return recordingError(re)
	}
	return err // a *session.ConfigError is a usage error; the rest are failures
}

// recordedEnd is replay's and analyze's status for a recording of a run that a watchdog alert or a
// deadlock stopped (byAlert: the recording holds what was in flight then): 3, as the run itself
// exited, so that a job replaying recordings to catch hangs sees them.
func recordedEnd(rep *report.Report, byAlert bool) error {
	if !byAlert || rep.Ended == "" {
		return nil
	}
	if root := rep.EndedRoot(); root != nil {
		return alertError(fmt.Errorf("the recorded run ended early: %s; %s", rep.Ended, root.Short()))
	}
	return alertError(fmt.Errorf("the recorded run ended early: %s", rep.Ended))
}

// runEnded is the command's error for how a run ended: a failed recording, an alert or a deadlock,
// another early end. A run cancelled by its caller (the console's quit, a signal) is not an error
// here: a signal is reported by finish. rep, when there is one, gives the root of the hang whose
// watchdog alert ended the run, which the error quotes: the alert names the peer its op waited
// for, which may itself be waiting on the root.
func runEnded(out session.Outcome, err error, rep *report.Report) error {
	var re *session.RecordingError
	switch {
	case errors.As(err, &re):
		return recordingError(re)
	case err != nil:
		return err
	case out.EndedByAlert():
		if root := rep.EndedRoot(); root != nil {
			return alertError(fmt.Errorf("the run ended early: %w; %s", out.Ended, root.Short()))
		}
		return alertError(fmt.Errorf("the run ended early: %w", out.Ended))
	case out.Ended != nil && !errors.Is(out.Ended, engine.ErrCanceled):
		return failure(fmt.Errorf("the run ended early: %w", out.Ended))
	}
	return nil
}

func scenariosCmd(args []string, stdout io.Writer) error {
	if isHelp(args) {
		fmt.Fprint(stdout, "Usage: xfertop scenarios [NAME [--print]]\n\nLists the built-in scenarios, their topology, steps and knobs (--set key=value), or prints\nNAME's file: copy it, edit it and run it with --scenario FILE (see docs/scenarios.md).\n"+exitHelp)
		return nil
	}
	if len(args) > 0 {
		name, rest := args[0], args[1:]
		if strings.HasPrefix(name, "-") && len(args) == 2 { // --print NAME
			name, rest = args[1], args[:1]
		}
		if len(rest) > 1 || (len(rest) == 1 && rest[0] != "--print" && rest[0] != "-print") || strings.HasPrefix(name, "-") {
			return usageError("usage: xfertop scenarios [NAME [--print]]")
		}
		src, err := scenario.Source(name)
		if err != nil {
			return usageError("%v", err)
		}
		_, err = stdout.Write(src)
		return err
	}
	for _, name := range scenario.BuiltinNames() {
		f, err := scenario.Builtin(name)
		if err != nil {
			return failure(fmt.Errorf("built-in scenario %s: %w", name, err))
		}
		def := ""
		if name == scenario.DefaultName {
			def = " (default)"
		}
		fmt.Fprintf(stdout, "%s%s  [topology %s, %d steps]\n", name, def, f.Topology, f.Steps)
		fmt.Fprintf(stdout, "  %s\n", wrap(f.Description, 96, "  "))
		for _, k := range f.Knobs {
			vals := ""
			if len(k.Values) > 0 {
				vals = " (" + strings.Join(k.Values, "|") + ")"
			}
			fmt.Fprintf(stdout, "  --set %s=%s%s  %s\n", k.Name, k.Default, vals, k.Help)
		}
		fmt.Fprintln(stdout)
	}
	return nil
}

func wrap(s string, width int, indent string) string {
	var b strings.Builder
	n := 0
	for i, w := range strings.Fields(s) {
		if i > 0 && n+1+len(w) > width {
			b.WriteString("\n" + indent)
			n = 0
		} else if i > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}

// textFlags are the text report's options, beside --json wherever a command prints a report.
type textFlags struct {
	top       int
	perDevice bool
}

func (t *textFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&t.top, "top", report.DefaultTop, fmt.Sprintf("text report: above %d devices each per-device table is summarised across devices and lists this many of the worst", report.SummariseAbove))
	fs.BoolVar(&t.perDevice, "per-device", false, "text report: every device's row however many devices (the JSON always has them all)")
}

// check refuses a --top that would list nothing.
func (t *textFlags) check() error {
	if t.top < 1 {
		return usageError("--top %d: must be at least 1", t.top)
	}
	return nil
}

func (t *textFlags) options() report.TextOptions {
	return report.TextOptions{Top: t.top, PerDevice: t.perDevice}
}

// writeReport prints r as text (shaped by text) or JSON.
func writeReport(stdout io.Writer, r *report.Report, asJSON bool, text report.TextOptions) error {
	var err error
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(r)
	} else {
		err = report.TextWith(stdout, r, text)
	}
	if err != nil {
		return failure(fmt.Errorf("write report: %w", err))
	}
	return nil
}

// flagSet reports whether the named flag was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// otlpFlags are the OpenTelemetry export flags of run, replay and attach.
type otlpFlags struct {
	endpoint string
	sample   float64
	minSpan  time.Duration
	maxRate  float64
	shutdown time.Duration
	detail   string
	protocol string
	required bool // --otlp-required: a failed export is the command's error (exitExport)
}

func (f *otlpFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.endpoint, "otlp", "", "export spans and metrics over OTLP to this endpoint (http://host:4317, https://…, host:port; default: OTEL_EXPORTER_OTLP_ENDPOINT)")
	fs.Float64Var(&f.sample, "otlp-sample", otel.DefaultSampleRatio, "fraction of steps exported, each step whole")
	fs.DurationVar(&f.minSpan, "otlp-min-span", otel.DefaultMinSpan, "spans shorter than this are not exported")
	fs.Float64Var(&f.maxRate, "otlp-max-rate", otel.DefaultMaxRate, "span budget per second: above it whole steps are skipped and counted (0: no limit)")
	fs.StringVar(&f.protocol, "otlp-protocol", "", "grpc or http/protobuf (default: OTEL_EXPORTER_OTLP_PROTOCOL, else grpc)")
	fs.StringVar(&f.detail, "otlp-detail", otel.DetailSpans, "spans: what a trace viewer shows (no kernels, waits or samples; steps may be sampled); full: every event with every field, for xfertop listen to rebuild the run exactly (no sampling, budget or minimum span; the run waits for the export rather than lose events)")
	fs.BoolVar(&f.required, "otlp-required", false, "exit with status 5 when the export failed: spans or metric points did not reach the collector (without it a failed export is a warning)")
	fs.DurationVar(&f.shutdown, "otlp-shutdown-timeout", otel.DefaultShutdownTimeout, "at the end, wait at most this long for the collector to take the spans still queued (they count as dropped after; a collector refusing connections is not waited for); with --otlp-detail full, wait as long as the collector keeps taking spans, giving up only when it took none for this long")
}

// config resolves the flags and the OTEL_* environment; nil when no export is asked for.
func (f *otlpFlags) config() (*otel.Config, error) {
	if !(f.sample >= 0 && f.sample <= 1) { // NaN too
		return nil, fmt.Errorf("--otlp-sample %v: give a fraction between 0 and 1", f.sample)
	}
	if !(f.maxRate >= 0) || math.IsInf(f.maxRate, 0) { // NaN is no limit to the comparisons below it
		return nil, fmt.Errorf("--otlp-max-rate %v: give a number of spans per second, 0 for no limit", f.maxRate)
	}
	if f.minSpan < 0 {
		return nil, fmt.Errorf("--otlp-min-span %v: must not be negative", f.minSpan)
	}
	if f.detail != otel.DetailSpans && f.detail != otel.DetailFull {
		return nil, fmt.Errorf("--otlp-detail %q: give spans or full", f.detail)
	}
	if f.shutdown <= 0 { // checked with or without an endpoint: a bad value is a mistake either way
		return nil, fmt.Errorf("--otlp-shutdown-timeout %v: must be positive", f.shutdown)
	}
	getenv := os.Getenv
	if f.protocol != "" {
		if f.protocol != "grpc" && f.protocol != "http/protobuf" {
			return nil, fmt.Errorf("--otlp-protocol %q: give grpc or http/protobuf", f.protocol)
		}
		getenv = func(k string) string {
			if k == "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" || k == "OTEL_EXPORTER_OTLP_PROTOCOL" {
				return f.protocol // the flag wins over the environment
			}
			return os.Getenv(k)
		}
	}
	cfg, ok, err := otel.Resolve(f.endpoint, getenv)
	if err != nil || !ok {
		return nil, err
	}
	cfg.SampleRatio, cfg.MinSpan, cfg.MaxRate, cfg.ShutdownTimeout, cfg.Detail = f.sample, f.minSpan, f.maxRate, f.shutdown, f.detail
	return &cfg, nil
}

// checkSpeed refuses a --speed that pacing cannot use: negative, NaN (every comparison with it is
// false, so a paced replay never reaches its next event) or infinite.
func checkSpeed(v float64) error {
	if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return usageError("--speed %v: must be 0 (unpaced) or a positive number", v)
	}
	return nil
}
