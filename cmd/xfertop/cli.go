package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/xfertop/xfertop/otel"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/scenario"
	"github.com/xfertop/xfertop/session"
	"github.com/xfertop/xfertop/timeline"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	exitAlert   = 3
	exitData    = 4 // an input holds nothing usable
)

const usage = `xfertop: see which bytes move between which GPUs, how fast, and where devices wait.

Usage:
  xfertop [run] [flags]               run a scenario on the embedded engine and print a report
  xfertop replay FILE [flags]         replay a recording (.xfr) and print its report
  xfertop analyze FILE... [flags]     report on a recording, PyTorch profiler (Kineto) traces or a Chrome trace
  xfertop convert IN OUT              .xfr -> Chrome trace JSON (Perfetto), or Kineto/Chrome JSON -> .xfr
  xfertop scenarios                   list built-in scenarios and their knobs
  xfertop help                        show this help

Run flags:
`

// xfertop runs the command line args and returns the exit status.
func xfertop(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := "run"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "run":
		return runCmd(ctx, args, stdout, stderr)
	case "scenarios":
		return scenariosCmd(args, stdout, stderr)
	case "replay":
		return replayCmd(ctx, args, stdout, stderr)
	case "analyze":
		return analyzeCmd(args, stdout, stderr)
	case "convert":
		return convertCmd(args, stdout, stderr)
	case "help":
		fmt.Fprint(stdout, usage)
		fs, _ := runFlags(stdout)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return exitOK
	}
	fmt.Fprintf(stderr, "xfertop: unknown command %q (commands: run, replay, analyze, convert, scenarios, help)\n", cmd)
	return exitUsage
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
	record   string
	console  consoleOpts
	otlp     otlpFlags
}

func runFlags(stderr io.Writer) (*flag.FlagSet, *runOpts) {
	o := &runOpts{cfg: session.Config{Sets: map[string]string{}}}
	fs := flag.NewFlagSet("xfertop run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.cfg.Scenario, "scenario", scenario.DefaultName, "built-in scenario name or path to a scenario file")
	fs.IntVar(&o.cfg.Steps, "steps", 0, "steps to run (0: the scenario's own)")
	fs.DurationVar(&o.cfg.Duration, "duration", 0, "stop after this much simulated time (0: no limit)")
	fs.Int64Var(&o.cfg.Seed, "seed", 1, "random seed; the same seed gives the same run")
	fs.Var(setFlag(o.cfg.Sets), "set", "set a scenario knob, key=value (repeatable)")
	fs.StringVar(&o.cfg.Topology, "topology", "", "topology preset (h100x1, h100x2, h100x4, h100x8, h100x8x2, h100x8x4; default: the scenario's)")
	fs.StringVar(&o.cfg.Backend, "backend", "sim", "engine backend: sim, or cuda (real GPUs and NCCL; needs a build with -tags cuda)")
	fs.BoolVar(&o.cfg.Fit, "fit", false, "cuda: run a topology with more ranks than GPUs, rank r on GPU r mod n")
	fs.Float64Var(&o.cfg.Speed, "speed", 0, "pace the simulation: simulated seconds per wall second (0: as fast as possible)")
	fs.BoolVar(&o.headless, "headless", false, "print a report instead of opening the console")
	fs.BoolVar(&o.json, "json", false, "print the report as JSON (with --headless)")
	fs.StringVar(&o.record, "record", "", "record the session to this .xfr file while it runs")
	fs.DurationVar(&o.console.tick, "tick", 60*time.Millisecond, "console: how often the view refreshes")
	fs.IntVar(&o.console.window, "window", timeline.DefaultWindow, "console: events kept in memory (older ones are trimmed; the recording keeps all)")
	o.otlp.register(fs)
	fs.BoolVar(&o.cfg.NVML, "nvml", false, "sample GPU telemetry through NVML beside the run (utilisation, memory, PCIe, NVLink, power, clocks, temperature)")
	fs.DurationVar(&o.cfg.NVMLInterval, "nvml-interval", 500*time.Millisecond, "how often --nvml samples")
	return fs, o
}

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, o := runFlags(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "xfertop run: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if o.cfg.Speed < 0 {
		fmt.Fprintf(stderr, "xfertop run: --speed %v: must be 0 (unpaced) or positive\n", o.cfg.Speed)
		return exitUsage
	}
	if o.cfg.Steps < 0 || o.cfg.Duration < 0 {
		fmt.Fprintln(stderr, "xfertop run: --steps and --duration must not be negative")
		return exitUsage
	}
	o.cfg.Record = o.record
	exp, err := o.otlp.config()
	if err != nil {
		fmt.Fprintf(stderr, "xfertop run: %v\n", err)
		return exitUsage
	}
	o.cfg.Export = exp
	if o.console.tick <= 0 || o.console.window <= 0 {
		fmt.Fprintln(stderr, "xfertop run: --tick and --window must be positive")
		return exitUsage
	}
	if !o.headless {
		if interactive(stdout) {
			if !flagSet(fs, "speed") {
				o.cfg.Speed = 1 // a person watches in real time unless asked otherwise
			}
			return liveConsole(ctx, o.cfg, o.console, stderr)
		}
		fmt.Fprintln(stderr, "xfertop: standard output is not a terminal: printing the headless report (use --headless to say so)")
	}
	p, err := session.Prepare(o.cfg)
	if err != nil {
		fmt.Fprintf(stderr, "xfertop: %v\n", err)
		return exitUsage
	}
	out, err := p.Run(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "xfertop: %v\n", err)
		return exitFailure
	}
	if code := writeReport(stdout, stderr, p.Report(out), o.json); code != exitOK {
		return code
	}
	if out.EndedByAlert() {
		return exitAlert
	}
	if out.Ended != nil {
		return exitFailure
	}
	return exitOK
}

func scenariosCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "xfertop scenarios: takes no arguments\n")
		return exitUsage
	}
	for _, name := range scenario.BuiltinNames() {
		f, err := scenario.Builtin(name)
		if err != nil {
			fmt.Fprintf(stderr, "xfertop: built-in scenario %s: %v\n", name, err)
			return exitFailure
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
	return exitOK
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

// writeReport prints r as text or JSON.
func writeReport(stdout, stderr io.Writer, r *report.Report, asJSON bool) int {
	var err error
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(r)
	} else {
		err = report.Text(stdout, r)
	}
	if err != nil {
		fmt.Fprintf(stderr, "xfertop: write report: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// flagSet reports whether the named flag was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// otlpFlags are the OpenTelemetry export flags of run and replay.
type otlpFlags struct {
	endpoint string
	sample   float64
	minSpan  time.Duration
	maxRate  float64
}

func (f *otlpFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.endpoint, "otlp", "", "export spans over OTLP to this endpoint (http://host:4317, https://…, host:port; default: OTEL_EXPORTER_OTLP_ENDPOINT)")
	fs.Float64Var(&f.sample, "otlp-sample", otel.DefaultSampleRatio, "fraction of steps exported, each step whole")
	fs.DurationVar(&f.minSpan, "otlp-min-span", otel.DefaultMinSpan, "spans shorter than this are not exported")
	fs.Float64Var(&f.maxRate, "otlp-max-rate", otel.DefaultMaxRate, "span budget per second: above it whole steps are skipped and counted (0: no limit)")
}

// config resolves the flags and the OTEL_* environment; nil when no export is asked for.
func (f *otlpFlags) config() (*otel.Config, error) {
	if f.sample < 0 || f.sample > 1 {
		return nil, fmt.Errorf("--otlp-sample %v: give a fraction between 0 and 1", f.sample)
	}
	if f.minSpan < 0 {
		return nil, fmt.Errorf("--otlp-min-span %v: must not be negative", f.minSpan)
	}
	cfg, ok, err := otel.Resolve(f.endpoint, nil)
	if err != nil || !ok {
		return nil, err
	}
	if f.maxRate < 0 {
		return nil, fmt.Errorf("--otlp-max-rate %v: must not be negative", f.maxRate)
	}
	cfg.SampleRatio, cfg.MinSpan, cfg.MaxRate = f.sample, f.minSpan, f.maxRate
	return &cfg, nil
}
