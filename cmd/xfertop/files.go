package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/xfertop/xfertop/importers"
	"github.com/xfertop/xfertop/importers/chrome"
	"github.com/xfertop/xfertop/importers/flightrecorder"
	"github.com/xfertop/xfertop/importers/inspector"
	"github.com/xfertop/xfertop/importers/kineto"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/scenario"
	"github.com/xfertop/xfertop/session"
)

// parseInterspersed parses flags that may come before or after the positional arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, args); err != nil {
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

func replayCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("xfertop replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	setUsage(fs, "xfertop replay FILE [flags]  (a recording, or a trace or Nsight Systems export, imported first)\n"+
		"       xfertop replay RANK.xfr RANK.xfr... | DIR [flags]  (a job's per-rank recordings (XFERTOP_RECORD_DIR), merged)")
	speed := fs.Float64("speed", 0, "replay at this many recorded seconds per wall second (0: as fast as possible)")
	from := fs.Duration("from", 0, "start at this time into the recording")
	headless := fs.Bool("headless", false, "print a report instead of opening the console")
	tick := fs.Duration("tick", 60*time.Millisecond, "console: how often the view refreshes")
	window := fs.Int("window", 0, windowUsage)
	asJSON := fs.Bool("json", false, "print the report as JSON instead of opening the console (implies --headless)")
	var text textFlags
	text.register(fs)
	salvage := fs.Bool("salvage", false, "skip damaged chunks instead of stopping at the first")
	var limits importLimits
	limits.register(fs)
	var otlp otlpFlags
	otlp.register(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagError(fs, err, stdout)
	}
	if err := text.check(); err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError("give a recording, or a job's per-rank recordings (files or their directory): xfertop replay FILE.xfr... [--speed X] [--from T] [--headless [--json]]")
	}
	if err := checkSpeed(*speed); err != nil {
		return err
	}
	if *from < 0 {
		return usageError("--from %v: must not be negative", *from)
	}
	if err := (consoleOpts{tick: *tick, window: *window}).check(); err != nil {
		return err
	}
	exp, err := otlp.config()
	if err != nil {
		return usageError("%w", err)
	}
	given := givenSource(pos)
	if pos, err = rankInputs(ctx, pos); err != nil {
		return err
	}
	if err := refuseNCCLTestsLogs(pos); err != nil {
		return err
	}
	rec, err := isRecording(pos[0])
	if err != nil {
		return err
	}
	*headless = *headless || *asJSON // --json asks for the report, which the console does not print
	console := !*headless && interactive(stdout)
	if (!rec || len(pos) > 1) && console {
		if !flagSet(fs, "speed") {
			*speed = 1
		}
		// The console opens at once and replays the import as it is written.
		opts := limits.options(false)
		opts.Source = given
		return importConsole(ctx, pos, opts, session.ReplayConfig{Speed: *speed, From: *from, Salvage: *salvage},
			consoleOpts{tick: *tick, window: *window}, stderr)
	}
	if !rec || len(pos) > 1 {
		// A trace, or several ranks: one recording first, so that it replays like any (seeking,
		// memory bounded by the window).
		opts := limits.options(false)
		opts.Source, opts.Context = given, ctx
		tmp, err := importToRecording(pos, opts, stderr)
		if err != nil {
			return err
		}
		defer os.RemoveAll(filepath.Dir(tmp))
		pos = []string{tmp}
	}
	if rec && len(pos) == 1 && limits.input.set {
		// A recording replayed as it is is read by the replayer, not an importer: the bound the
		// user gave holds it all the same.
		if err := importers.CheckSizes(pos, importers.FormatRecording, limits.input.n); err != nil {
			return dataError(err)
		}
	}
	if err := checkFrom(pos[0], *from, *salvage); err != nil {
		return err
	}
	if rec && len(pos) == 1 && limits.stepRange != importers.DefaultStepRange {
		// A recording is replayed, not imported: the import's warning is said here.
		fmt.Fprintf(stderr, "xfertop: warning: --step-range %q applies to Nsight Systems exports only: ignored for an xfertop recording\n", limits.stepRange)
	}
	if !*headless {
		if console {
			if !flagSet(fs, "speed") {
				*speed = 1
			}
			return replayConsole(ctx, session.ReplayConfig{Path: pos[0], Speed: *speed, From: *from, Salvage: *salvage},
				consoleOpts{tick: *tick, window: *window})
		}
		headlessNotice(stderr, stdout, "")
	}
	return replayReport(ctx, session.ReplayConfig{Path: pos[0], Speed: *speed, From: *from, Salvage: *salvage, Export: exp}, *asJSON, text.options(), &otlp, stdout, stderr)
}

// importToRecording imports a trace or an export, or merges a job's per-rank recordings, into a
// recording in a new temporary directory, so that it replays like any recording (with seeking,
// and memory bounded by the console's window).
func importToRecording(paths []string, opts importers.Options, stderr io.Writer) (string, error) {
	dir, err := os.MkdirTemp("", "xfertop-import-")
	if err != nil {
		return "", failure(err)
	}
	name := importName(paths)
	sink := &recordingSink{path: filepath.Join(dir, name+".xfr")}
	namesOf(opts.Context).stand(sink.path, importedName(paths, opts))
	res, err := readInput(paths, opts, sink, stderr)
	if err == nil && res.Events == 0 {
		err = dataError(fmt.Errorf("%s: no events", strings.Join(paths, ", ")))
	}
	if err == nil {
		err = sink.close(res)
	}
	if err != nil {
		_ = sink.fail(err)
		os.RemoveAll(dir)
		return "", err
	}
	return sink.path, nil
}

// importedName is how messages name the recording an import writes to a temporary file: by the
// user's inputs, never the file's path (which the user did not give).
func importedName(paths []string, opts importers.Options) string {
	if opts.Source != "" {
		return opts.Source
	}
	return listNames(paths)
}

// perRankFormat reports whether path is of a format written one file per rank or process (NCCL
// Inspector's logs, Flight Recorder's dumps), which its importer merges.
func perRankFormat(path string) bool {
	f, err := importers.Detect(path)
	return err == nil && (f == importers.FormatInspector || f == importers.FormatFlightRecorder)
}

// givenSource names the inputs as the user gave them, for the report's and the console's title,
// when a directory among them is expanded to the files in it (rankInputs): the directory, not the
// dumps or recordings found in it. Many files (a shell's glob of a job's per-rank traces) are
// summarised, "kin/rank-*.json.gz (128 files)", rather than listed in a title kilobytes long. It
// is "" when the inputs are a few files, named by the importer.
func givenSource(paths []string) string {
	for _, p := range paths {
		if st, err := os.Stat(p); (err == nil && st.IsDir()) || isPipe(p) {
			return listNames(paths)
		}
	}
	if len(paths) > 4 {
		return filesPattern(paths)
	}
	return ""
}

// filesPattern names many files for a title: as a glob of their shared directory, name prefix
// and suffix, and their count ("kin/rank-*.json.gz (128 files)"); files in several directories
// as listNames does.
func filesPattern(paths []string) string {
	dir := filepath.Dir(paths[0])
	pre, suf := filepath.Base(paths[0]), filepath.Base(paths[0])
	short := len(pre)
	for _, p := range paths[1:] {
		if filepath.Dir(p) != dir {
			return listNames(paths)
		}
		b := filepath.Base(p)
		short = min(short, len(b))
		for !strings.HasPrefix(b, pre) {
			pre = pre[:len(pre)-1]
		}
		for !strings.HasSuffix(b, suf) {
			suf = suf[1:]
		}
	}
	if len(pre)+len(suf) > short {
		suf = suf[len(pre)+len(suf)-short:]
	}
	name := pre + "*" + suf
	if !strings.HasPrefix(paths[0], dir+string(filepath.Separator)) { // given as bare names
		return fmt.Sprintf("%s (%d files)", name, len(paths))
	}
	return fmt.Sprintf("%s (%d files)", filepath.Join(dir, name), len(paths))
}

// listNames lists paths for a title: all of them, or the first three and how many there are.
func listNames(paths []string) string {
	if len(paths) <= 4 {
		return strings.Join(paths, ", ")
	}
	return fmt.Sprintf("%s, … (%d files)", strings.Join(paths[:3], ", "), len(paths))
}

// readDir reads a directory; a variable so that a test can make one unreadable to root.
var readDir = os.ReadDir

// rankInputs checks the inputs of replay, analyze and convert, and expands a directory to the
// per-rank recordings in it (XFERTOP_RECORD_DIR: rank<R>-<host>-<pid>.xfr), in name order.
func rankInputs(ctx context.Context, paths []string) ([]string, error) {
	paths, err := spoolPipes(ctx, paths)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err == nil && st.IsDir() {
			// Glob reads a directory it cannot open as empty: say what stops it, as for a file.
			if _, err := readDir(p); err != nil {
				return nil, failure(err)
			}
			files, err := filepath.Glob(filepath.Join(p, "*.xfr"))
			if err != nil {
				return nil, failure(err)
			}
			if len(files) == 0 && flightrecorder.IsDir(p) { // PyTorch Flight Recorder's per-rank dumps
				if files, err = flightrecorder.Expand([]string{p}); err != nil {
					return nil, usageError("%v", err)
				}
			}
			if len(files) == 0 && inspector.IsDir(p) { // NCCL Inspector's per-process logs
				if files, err = inspector.Expand([]string{p}); err != nil {
					return nil, usageError("%v", err)
				}
			}
			if len(files) == 0 { // a job's per-rank traces (the PyTorch profiler's, one per rank)
				if files, err = dirTraces(p); err != nil {
					return nil, err
				}
			}
			if len(files) == 0 {
				return nil, usageError("%s is a directory without recordings (*.xfr), Flight Recorder dumps, NCCL Inspector logs or traces (*.json, *.json.gz): "+
					"give a recording or trace files, or the directory of a job's per-rank recordings (XFERTOP_RECORD_DIR), dumps, logs or traces", p)
			}
			out = append(out, files...)
			continue
		}
		if err := inputFile(p, "a recording or a trace"); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// checkFrom refuses a --from past the end of the recording at path, saying where it ends.
func checkFrom(path string, from time.Duration, salvage bool) error {
	if from <= 0 {
		return nil
	}
	end, events, err := recordingEnd(path, salvage)
	if err != nil {
		return err
	}
	if events == 0 {
		return fmt.Errorf("%s: %w", path, session.ErrNoEvents)
	}
	if from.Nanoseconds() > end {
		return usageError("--from %v is past the end of %s: the recording ends at %s", from, path, humanDuration(end))
	}
	return nil
}

// recordingEnd returns when the last event of a recording ends, and how many events it holds: from
// its index, or by reading it through when it has none (a recording that was not closed).
func recordingEnd(path string, salvage bool) (end int64, events int, err error) {
	r, err := recordings.Open(path, recordings.Options{Salvage: salvage})
	if err != nil {
		return 0, 0, err
	}
	defer r.Close()
	if r.Indexed() {
		for _, e := range r.Index() {
			end, events = max(end, e.MaxEnd), events+e.Events
		}
		return end, events, nil
	}
	for r.Next() {
		for _, e := range r.At() {
			end = max(end, e.End)
		}
		events += len(r.At())
	}
	return end, events, r.Err()
}

// replayReport reads a recording back and prints its report, with the warnings on standard error.
func replayReport(ctx context.Context, cfg session.ReplayConfig, asJSON bool, text report.TextOptions, otlp *otlpFlags, stdout, stderr io.Writer) error {
	rp, err := session.Replay(ctx, cfg)
	if rp != nil {
		for _, w := range rp.Warnings {
			fmt.Fprintf(stderr, "xfertop: warning: %s\n", w)
		}
	}
	if err != nil {
		return err // a damaged recording or one without events is a data error (exitStatus), an unreadable file a failure
	}
	rep := rp.Report()
	if err := writeReport(stdout, rep, asJSON, text); err != nil {
		return err
	}
	if err := otlp.check(rep.Export, stderr); err != nil {
		return err
	}
	return recordedEnd(rep, rp.EndedByAlert)
}

// isRecording reports whether path is a recording, by its content or else its name
// (importers.DetectBytes). A file of no format xfertop reads (an Nsight Systems report, an empty
// trace among them) is a data error saying what to do.
func isRecording(path string) (bool, error) {
	f, err := importers.Detect(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return false, failure(err)
		}
		return false, dataError(err)
	}
	return f == importers.FormatRecording, nil
}

func analyzeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("xfertop analyze", flag.ContinueOnError)
	fs.SetOutput(stderr)
	setUsage(fs, "xfertop analyze FILE... [flags]  (a recording, a job's per-rank recordings or their directory, trace files (.json, .json.gz, one per rank), Nsight Systems exports (.sqlite), or an nccl-tests log (with --topology T: against the simulated sweep))")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	// analyze never opens the console; the flag is taken so that a command line that works for
	// run, replay and whatif works here too.
	fs.Bool("headless", true, "accepted for consistency with run, replay and whatif: analyze always prints a report")
	var text textFlags
	text.register(fs)
	likeHTA := fs.Bool("like-hta", false, "analyse what Holistic Trace Analysis does by default: with two or more ProfilerStep#N, the ops launched before the last step begins; timestamps rounded to whole µs")
	salvage := fs.Bool("salvage", false, "skip damaged chunks of a recording")
	var limits importLimits
	limits.register(fs)
	sweep := newNCCLTestsFlags()
	sweep.register(fs, false)
	var critical criticalFlag
	fs.Var(&critical, "critical-path", "also find each step's critical path (the input is then held in memory): its mean length and time on it by compute, communication, copies, launch and waits; =hta: Holistic Trace Analysis's longest weighted path (host gaps between CPU operators weigh nothing)")
	opName := fs.String("op", "", "nccl-tests log: the operation it measured, when the log cannot tell (all_gather or alltoall, ...)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagError(fs, err, stdout)
	}
	if err := text.check(); err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError("give a recording (.xfr) or a job's per-rank recordings (files or their directory), or one or more trace files (.json, .json.gz; one per rank) or Nsight Systems exports (.sqlite), or an nccl-tests log")
	}
	given := givenSource(pos)
	if pos, err = rankInputs(ctx, pos); err != nil {
		return err
	}
	if log, err := isNCCLTestsLog(pos[0]); err != nil || log {
		if err == nil && len(pos) > 1 {
			err = usageError("give one nccl-tests log at a time")
		}
		if err != nil {
			return err
		}
		compare := flagSet(fs, "topology") || flagSet(fs, "scenario")
		return analyzeNCCLTests(ctx, pos[0], *opName, sweep, compare, stdout, stderr)
	}
	if err := ncclTestsOnly(fs, pos[0]); err != nil {
		return err
	}
	if _, err := isRecording(pos[0]); err != nil {
		return err
	}
	opts := limits.options(*likeHTA)
	opts.Salvage, opts.Context, opts.Source = *salvage, ctx, given
	rep, res, err := inputReport(pos, opts, stderr)
	if err != nil {
		return err
	}
	if *likeHTA && res.Format == importers.FormatNsys {
		fmt.Fprintln(stderr, "xfertop: warning: --like-hta selects by PyTorch profiler steps and rounds JSON times: it changes nothing in an Nsight Systems export")
	}
	if res.Events == 0 {
		return dataError(fmt.Errorf("%s: no events", strings.Join(pos, ", ")))
	}
	if critical != "" {
		if rep.CriticalPath, err = inputCriticalPath(ctx, pos, limits, *likeHTA, critical == "hta", stderr); err != nil {
			return err
		}
	}
	if err := writeReport(stdout, rep, *asJSON, text.options()); err != nil {
		return err
	}
	return recordedEnd(rep, res.InFlight != nil)
}

const convertHelp = `Usage: xfertop convert IN... OUT [flags]

Converts a recording to a Chrome trace (IN.xfr -> OUT.json, for Perfetto or chrome://tracing), or a
Kineto or Chrome trace or an Nsight Systems SQLite export to a recording (IN.json[.gz] or
IN.sqlite -> OUT.xfr). A job's per-rank recordings (several IN.xfr, or their directory) are merged
first, into one recording (OUT.xfr) or one trace (OUT.json). A recording converted to a recording
(IN.xfr -> OUT.xfr) is read as replay reads it and written again, closed cleanly: what lies before
a torn tail is kept. The format of IN is told by its
content where that says one, else by its name (a file named .xfr is a recording).

Flags:
`

func convertCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("xfertop convert", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), convertHelp)
		fs.PrintDefaults()
	}
	var limits importLimits
	limits.register(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagError(fs, err, stdout)
	}
	if len(pos) < 2 {
		return usageError("usage: xfertop convert IN... OUT  (IN.xfr -> OUT.json, IN.json[.gz] or IN.sqlite -> OUT.xfr, a job's RANK.xfr... or DIR -> OUT.xfr or OUT.json)")
	}
	out := pos[len(pos)-1]
	merged := limits.options(false)
	merged.Source = givenSource(pos[:len(pos)-1]) // a directory of ranks: the merged recording is named by it
	merged.Context = ctx
	in, err := rankInputs(ctx, pos[:len(pos)-1])
	if err != nil {
		return err
	}
	if err := refuseNCCLTestsLogs(in); err != nil {
		return err
	}
	if ost, err := os.Stat(out); err == nil {
		for _, p := range in {
			if st, err := os.Stat(p); err == nil && os.SameFile(st, ost) {
				return usageError("%s is both an input and the output: write the output to another file", out)
			}
		}
	}
	rec, err := isRecording(in[0])
	if err != nil {
		return err
	}
	if !rec {
		if len(in) > 1 && !perRankFormat(in[0]) {
			return usageError("convert one trace at a time (%d given)", len(in))
		}
		if len(in) > 1 { // a job's per-rank logs or dumps, merged into one recording
			return convertTrace(strings.Join(pos[:len(pos)-1], ", "), out, merged, stdout, stderr, in...)
		}
		one := limits.options(false)
		one.Context = ctx
		return convertTrace(in[0], out, one, stdout, stderr)
	}
	if len(in) > 1 && strings.HasSuffix(out, ".xfr") {
		return convertTrace(strings.Join(pos[:len(pos)-1], ", "), out, merged, stdout, stderr, in...)
	}
	if strings.HasSuffix(out, ".xfr") {
		// One recording to another: read as replay reads it (a torn tail is said, and what is
		// before it kept), written whole and closed cleanly.
		return convertTrace(strings.Join(pos[:len(pos)-1], ", "), out, merged, stdout, stderr, in...)
	}
	if !strings.HasSuffix(out, ".json") {
		return usageError("%s is a recording; write it to a .json file (Chrome trace) or a .xfr recording, not %q", in[0], out)
	}
	var all importers.Collect
	if _, err := readInput(in, importers.Options{Context: ctx}, &all, stderr); err != nil {
		return err // a damaged recording is a data error (exitStatus)
	}
	f, err := os.Create(out)
	if err != nil {
		return failure(err)
	}
	meta := map[string]string{}
	for _, kv := range recordings.MetaPairs(all.Header.Meta) {
		meta[kv[0]] = kv[1]
	}
	if err := chrome.Write(f, all.All, all.Header.Strings, meta); err != nil {
		f.Close()
		return failure(fmt.Errorf("%s: %w", out, err))
	}
	if err := f.Close(); err != nil {
		return failure(fmt.Errorf("%s: %w", out, err))
	}
	fmt.Fprintf(stdout, "wrote %s: %d events as Chrome trace JSON (open it in Perfetto or chrome://tracing)\n", out, len(all.All))
	return nil
}

// convertTrace converts a Kineto or Chrome trace, or an Nsight Systems export, to a recording; or
// merges a job's per-rank recordings, logs or dumps (ranks, named in by in) into one.
func convertTrace(in, out string, opts importers.Options, stdout, stderr io.Writer, ranks ...string) error {
	if !strings.HasSuffix(out, ".xfr") {
		return usageError("%s is a trace; write it to a .xfr recording, not %q", in, out)
	}
	paths := []string{in}
	if len(ranks) > 0 {
		paths = ranks
	}
	sink := &recordingSink{path: out}
	res, err := readInput(paths, opts, sink, stderr)
	if err == nil && res.Events == 0 { // as analyze says of it: a recording of nothing helps no one
		err = dataError(fmt.Errorf("%s: no events", namesOf(opts.Context).say(in)))
	}
	if err == nil {
		err = sink.close(res)
	}
	if err != nil {
		_ = sink.fail(err)
		if sink.created { // a conversion cut short is no recording of the input: leave none
			_ = os.Remove(out)
		}
		return err
	}
	how := res.Importer
	switch {
	case len(ranks) == 1 && res.Format == importers.FormatRecording:
		how = "a recording, read and written again"
	case len(ranks) > 0 && res.Format == importers.FormatRecording:
		how = ranksMerged(res.Merged, res.LeftOut)
	case len(ranks) > 0:
		how = fmt.Sprintf("%s, %d per-rank files merged", res.Importer, len(ranks))
	}
	fmt.Fprintf(stdout, "wrote %s: %d events from %s (%s)\n", out, res.Events, namesOf(opts.Context).say(in), how)
	return nil
}

// ranksMerged says how many of a job's per-rank recordings a merge took, and how many it left out
// (torn before their meta: the warnings name them).
func ranksMerged(merged, leftOut int) string {
	s := fmt.Sprintf("%d per-rank recordings merged", merged)
	if merged == 1 {
		s = "1 per-rank recording merged"
	}
	if leftOut > 0 {
		s += fmt.Sprintf(", %d left out", leftOut)
	}
	return s
}

// importLimits are the flags of importing a trace or an export: what it may cost, and what a step is.
type importLimits struct {
	input, token sizeValue
	stepRange    string
	verbose      bool
}

func (l *importLimits) register(fs *flag.FlagSet) {
	l.input.n, l.token.n = kineto.DefaultMaxInputBytes, int64(kineto.DefaultMaxTokenBytes)
	fs.Var(&l.input, "max-input-bytes", "refuse a JSON trace or NCCL Inspector log holding more than this after decompression, or a Flight Recorder dump, Nsight Systems export or xfertop recording larger than this (the default below is the traces'; dumps: 256MiB unless given; the rest: no bound unless given; NCCL RAS reports: 256MiB always)")
	fs.Var(&l.token, "max-token-bytes", "refuse a JSON trace or Flight Recorder dump with a string or number longer than this")
	fs.BoolVar(&l.verbose, "v", false, "Nsight Systems export: a warning for each event left out, not one line per file")
	fs.StringVar(&l.stepRange, "step-range", "ProfilerStep", "Nsight Systems export: the NVTX range that is a step (NAME, NAME#N or \"NAME, ...\")")
}

func (l *importLimits) options(likeHTA bool) importers.Options {
	o := importers.Options{Trace: kineto.Options{LikeHTA: likeHTA, MaxInputBytes: l.input.n, MaxTokenBytes: int(l.token.n)},
		StepRange: l.stepRange, Verbose: l.verbose}
	if l.input.set { // a dump read whole keeps its own, smaller default unless the flag is given
		o.MaxWholeFileBytes = l.input.n
	}
	return o
}

// sizeValue is a flag holding a positive byte count such as 64MiB or 16GiB.
type sizeValue struct {
	n   int64
	set bool // given on the command line
}

func (v *sizeValue) String() string { return scenario.FormatSize(v.n) }

func (v *sizeValue) Set(s string) error {
	n, err := scenario.ParseSize(s)
	if err != nil {
		return err
	}
	if n <= 0 {
		return fmt.Errorf("%q: give a size above 0", s)
	}
	v.n, v.set = n, true
	return nil
}

// progressLine draws an import's progress on one line of a terminal, rewritten in place.
type progressLine struct {
	w     io.Writer
	name  string
	verb  string // what is done to it: "reading" when empty
	shown bool
	last  time.Time
}

func (p *progressLine) show(done, total int64) {
	if now := time.Now(); now.Sub(p.last) >= 100*time.Millisecond || done == total {
		p.last, p.shown = now, true
		pct := 100.0
		if total > 0 {
			pct = 100 * float64(done) / float64(total)
		}
		const width = 30
		bar := strings.Repeat("█", int(pct/100*width)) + strings.Repeat("░", width-int(pct/100*width))
		fmt.Fprintf(p.w, "\rxfertop: %s %s %s %3.0f%%", cmpOr(p.verb, "reading"), p.name, bar, pct)
	}
}

func (p *progressLine) clear() {
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

// dirTraces lists the traces directly in dir (*.json, *.json.gz whose content is a JSON trace),
// in name order: a job's per-rank PyTorch profiler traces, read as if given one by one. Beside
// one, a file so named that is empty or garbled is listed too: it is a rank's trace that cannot be
// read, which the import leaves out with a warning rather than in silence. A directory whose
// every such file is empty or garbled is refused, saying so.
func dirTraces(dir string) ([]string, error) {
	var out, bad []string
	empty := 0
	for _, pat := range []string{"*.json", "*.json.gz"} {
		files, _ := filepath.Glob(filepath.Join(dir, pat))
		for _, f := range files {
			if st, err := os.Stat(f); err != nil || st.IsDir() {
				continue
			}
			format, err := importers.Detect(f)
			switch {
			case err == nil && format == importers.FormatTrace:
				out = append(out, f)
			case errors.Is(err, importers.ErrEmpty):
				empty++
				bad = append(bad, f)
			case errors.Is(err, importers.ErrUnknownFormat):
				bad = append(bad, f)
			}
		}
	}
	switch {
	case len(out) > 0:
		out = append(out, bad...)
	case empty > 0 && empty == len(bad):
		return nil, dataError(fmt.Errorf("%s: every trace in it (%d *.json, *.json.gz files) is empty (0 bytes)", dir, empty))
	case len(bad) > 0:
		return nil, dataError(fmt.Errorf("%s: none of its %d *.json, *.json.gz files is a trace (%d empty, the others none of the formats xfertop reads)", dir, len(bad), empty))
	}
	sort.Strings(out)
	return out, nil
}

// ncclTestsOnly refuses the flags that apply to an nccl-tests log alone (the sweep to simulate
// beside it) when the input is something else: silently ignored, a --topology that names no
// topology would pass for checked.
func ncclTestsOnly(fs *flag.FlagSet, input string) error {
	for _, name := range []string{"topology", "scenario", "set", "seed", "op"} {
		if flagSet(fs, name) {
			return usageError("--%s applies to an nccl-tests log only (the sweep simulated beside it); %s is not one", name, input)
		}
	}
	return nil
}
