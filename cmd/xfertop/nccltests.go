package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/xfertop/xfertop/report/nccltests"
	"github.com/xfertop/xfertop/scenario"
	"github.com/xfertop/xfertop/session"
	"github.com/xfertop/xfertop/timeline"
)

const ncclTestsHelp = `Usage: xfertop nccl-tests OP [flags]

Runs nccl-tests' sweep of OP on the simulated cluster and prints it as nccl-tests prints it
(size, count, type, redop, root, then time, algbw, busbw and #wrong out of place and in place),
so that it lies beside a real log line for line. OP is all_reduce, all_gather, reduce_scatter,
alltoall, broadcast or sendrecv (or the binary's name: all_reduce_perf, ...). The flags -b, -e,
-f and -n are nccl-tests' own; the sweep is the built-in scenario nccl-OP (e.g. nccl-all-reduce).

Flags:
`

// ncclTestsFlags are the flags of the simulated sweep, shared by nccl-tests and analyze LOG.
type ncclTestsFlags struct {
	topology, scenario string
	minB, maxB         sizeValue
	factor, iters      int
	seed               int64
	sets               setFlag
}

func newNCCLTestsFlags() *ncclTestsFlags {
	f := &ncclTestsFlags{factor: 2, iters: 20, seed: 1, sets: setFlag{}}
	f.minB.n, f.maxB.n = 8, 8<<30
	return f
}

// register adds the flags of the simulation; sizes adds nccl-tests' -b, -e, -f and -n.
func (f *ncclTestsFlags) register(fs *flag.FlagSet, sizes bool) {
	fs.StringVar(&f.topology, "topology", "", "topology to simulate (default: the scenario's, h100x8)")
	fs.StringVar(&f.scenario, "scenario", "", "scenario file or built-in name of the sweep (default: nccl-OP, e.g. nccl-all-reduce)")
	fs.Int64Var(&f.seed, "seed", 1, "random seed of the simulation")
	fs.Var(f.sets, "set", "set a knob of the sweep's scenario, key=value (repeatable): nccl_algo=ring, nccl_proto=ll128, ...")
	if sizes {
		fs.Var(&f.minB, "b", "smallest size (nccl-tests -b; 8, 64K, 1M, 8G)")
		fs.Var(&f.maxB, "e", "largest size (nccl-tests -e)")
		fs.IntVar(&f.factor, "f", 2, "size multiplier between rows (nccl-tests -f)")
		fs.IntVar(&f.iters, "n", 20, "iterations per size (nccl-tests -n)")
	}
}

// ncclOp reads an operation name as nccl-tests' binaries and xfertop spell it.
func ncclOp(name string) (timeline.CollOp, error) {
	name = strings.TrimSuffix(name, "_perf")
	op, ok := timeline.ParseCollOp(name)
	for _, o := range nccltests.Ops {
		if ok && o == op {
			return op, nil
		}
	}
	return 0, fmt.Errorf("%q is not an nccl-tests operation xfertop simulates (all_reduce, all_gather, reduce_scatter, alltoall, broadcast, sendrecv)", name)
}

// sweepScenario is the built-in scenario of op's sweep: nccl-all-reduce, nccl-alltoall, ...
func sweepScenario(op timeline.CollOp) string {
	return "nccl-" + strings.ReplaceAll(strings.TrimSuffix(nccltests.Binary(op), "_perf"), "_", "-")
}

// simulateSweep runs op's sweep as f says and returns it as an nccl-tests table.
func simulateSweep(ctx context.Context, op timeline.CollOp, f *ncclTestsFlags) (*nccltests.Table, error) {
	if f.minB.n > f.maxB.n || f.factor < 2 || f.iters < 1 {
		return nil, usageError("need -b <= -e, -f >= 2 and -n >= 1 (got -b %d -e %d -f %d -n %d)", f.minB.n, f.maxB.n, f.factor, f.iters)
	}
	cfg := session.Config{Scenario: f.scenario, Topology: f.topology, Seed: f.seed, Sets: map[string]string{}}
	if cfg.Scenario == "" {
		cfg.Scenario = sweepScenario(op)
	}
	for k, v := range f.sets {
		cfg.Sets[k] = v
	}
	cfg.Sets["min_bytes"], cfg.Sets["max_bytes"] = strconv.FormatInt(f.minB.n, 10), strconv.FormatInt(f.maxB.n, 10)
	cfg.Sets["factor"], cfg.Sets["iters"] = strconv.Itoa(f.factor), strconv.Itoa(f.iters)
	p, err := session.Prepare(cfg)
	if err != nil {
		return nil, prepareError(err)
	}
	out, err := p.Run(ctx)
	if err != nil {
		return nil, err
	}
	if err := runEnded(out, nil, nil); err != nil {
		return nil, err
	}
	rep := p.Report(out)
	t, err := nccltests.FromReport(rep, op, f.iters)
	if err != nil {
		return nil, failure(fmt.Errorf("scenario %s: %w", cfg.Scenario, err))
	}
	t.Factor = int64(f.factor)
	var steps []int64
	for s := f.minB.n; s <= f.maxB.n; s *= int64(f.factor) {
		steps = append(steps, scenario.NCCLTestsSize(op, s, t.Ranks))
		if s > f.maxB.n/int64(f.factor) {
			break // the next step would overflow
		}
	}
	t.Expand(steps) // one row per step, as nccl-tests prints them
	t.MinBytes, t.MaxBytes = f.minB.n, f.maxB.n
	t.Notes = []string{fmt.Sprintf("xfertop nccl-tests %s: simulated (backend %s, topology %s, scenario %s, seed %d); in-place repeats out-of-place (the simulator does not tell them apart)",
		op, rep.Backend, rep.Topology, cfg.Scenario, f.seed)}
	return t, nil
}

func ncclTestsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("xfertop nccl-tests", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), ncclTestsHelp)
		fs.PrintDefaults()
	}
	f := newNCCLTestsFlags()
	f.register(fs, true)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagError(fs, err, stdout)
	}
	if len(pos) != 1 {
		return usageError("give one operation: xfertop nccl-tests all_reduce [-b 8 -e 8G -f 2] [--topology h100x8x2]")
	}
	op, err := ncclOp(pos[0])
	if err != nil {
		return usageError("%w", err)
	}
	t, err := simulateSweep(ctx, op, f)
	if err != nil {
		return err
	}
	if err := nccltests.Write(stdout, t); err != nil {
		return failure(fmt.Errorf("write table: %w", err))
	}
	return nil
}

// isNCCLTestsLog reports whether path holds an nccl-tests log, by its first bytes.
func isNCCLTestsLog(path string) (bool, error) {
	file, err := os.Open(path)
	if err != nil {
		return false, failure(err)
	}
	defer file.Close()
	head := make([]byte, 8192)
	n, err := io.ReadFull(file, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false, failure(fmt.Errorf("%s: %w", path, err))
	}
	return nccltests.Detect(head[:n]), nil
}

// refuseNCCLTestsLogs refuses an nccl-tests log given to a command other than analyze: it is a
// table of timings, not events, and would otherwise be called malformed JSON. Only regular files
// are looked at: the first bytes of a pipe are the input's.
func refuseNCCLTestsLogs(paths []string) error {
	for _, p := range paths {
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
			continue // the command's own checks say what is wrong with it
		}
		if log, err := isNCCLTestsLog(p); err == nil && log {
			return dataError(fmt.Errorf("%s is an nccl-tests log: only analyze reads it (as a reference; with --topology, against the simulated sweep)", p))
		}
	}
	return nil
}

// analyzeNCCLTests reads an nccl-tests log as a reference table; with --topology or --scenario it
// runs the simulated sweep of the same operation and sizes and prints the two side by side.
func analyzeNCCLTests(ctx context.Context, path string, opName string, f *ncclTestsFlags, compare bool, stdout, stderr io.Writer) error {
	file, err := os.Open(path)
	if err != nil {
		return failure(err)
	}
	ref, err := nccltests.Parse(file, path)
	file.Close()
	if err != nil {
		return readError(err)
	}
	for _, w := range ref.Warnings {
		fmt.Fprintf(stderr, "xfertop: warning: %s\n", w)
	}
	var op timeline.CollOp
	if opName != "" {
		if op, err = ncclOp(opName); err != nil {
			return usageError("--op: %w", err)
		}
	} else if op, err = nccltests.InferOp(ref); err != nil {
		if compare {
			return usageError("%s: %v: give --op", path, err)
		}
		fmt.Fprintf(stderr, "xfertop: warning: %s: %v\n", path, err)
	}
	ref.Op = op
	if !compare {
		return writeReference(stdout, path, ref)
	}
	f.minB.n, f.maxB.n = ref.Rows[0].Size, ref.Rows[len(ref.Rows)-1].Size
	for _, r := range ref.Rows {
		f.minB.n, f.maxB.n = min(f.minB.n, r.Size), max(f.maxB.n, r.Size)
	}
	f.minB.n = max(f.minB.n, 1)
	if ref.Factor >= 2 {
		f.factor = int(min(ref.Factor, 1024))
	}
	if ref.Iters > 0 {
		f.iters = min(ref.Iters, 20) // the simulator is deterministic: a few iterations say all
	}
	sim, err := simulateSweep(ctx, op, f)
	if err != nil {
		return err
	}
	if ref.Ranks > 0 && sim.Ranks != ref.Ranks {
		fmt.Fprintf(stderr, "xfertop: warning: the log ran %d ranks and the simulation %d: choose a --topology of %d GPUs\n", ref.Ranks, sim.Ranks, ref.Ranks)
	}
	ranks := "ranks not in the log"
	if ref.Ranks > 0 {
		ranks = fmt.Sprintf("%d ranks", ref.Ranks)
	}
	title := fmt.Sprintf("%s (%s, %s) against xfertop's simulation (%s)", path, op, ranks, strings.TrimPrefix(sim.Notes[0], "xfertop nccl-tests "))
	if err := nccltests.Compare(stdout, title, nccltests.Diff(ref, sim)); err != nil {
		return failure(fmt.Errorf("write comparison: %w", err))
	}
	return nil
}

// writeReference prints a log's table as read.
func writeReference(w io.Writer, path string, t *nccltests.Table) error {
	op := "unknown operation"
	if t.Op != 0 {
		op = t.Op.String()
	}
	ranks := "ranks not in the log"
	if t.Ranks > 0 {
		ranks = fmt.Sprintf("%d ranks", t.Ranks)
	}
	fmt.Fprintf(w, "nccl-tests log %s: %s, %s, %d sizes", path, op, ranks, len(t.Rows))
	if t.HasAvg {
		fmt.Fprintf(w, ", avg bus bandwidth %g GB/s", t.AvgBusBW)
	}
	fmt.Fprintf(w, "\n%12s  %10s  %8s  %8s\n", "size (B)", "time (us)", "algbw", "busbw")
	for _, r := range t.Rows {
		fmt.Fprintf(w, "%12d  %10.2f  %8.2f  %8.2f\n", r.Size, r.Out.TimeUs, r.Out.AlgBW, r.Out.BusBW)
	}
	fmt.Fprintln(w, "(give --topology or --scenario to compare it with a simulated sweep)")
	return nil
}
