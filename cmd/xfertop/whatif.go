package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/xfertop/xfertop/depgraph"
	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/engine/topology"
	"github.com/xfertop/xfertop/importers"
	"github.com/xfertop/xfertop/importers/kineto"
	"github.com/xfertop/xfertop/importers/nsys"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/units"
	"github.com/xfertop/xfertop/whatif"
)

// whatifOpts are the what-if command's flags.
type whatifOpts struct {
	topology string
	hosts    int
	scale    scaleFlag
	comm     string
	sets     setFlag
	from     string // --kernels-from
	heal     healFlag
	healed   []fault.Fault // the recording's faults --heal takes out
	json     bool
	headless bool
	limits   importLimits
	// maxGraphOps is --max-graph-ops: the most ops of a trace without steps whose whole graph
	// the what-if holds at once (0: no bound).
	maxGraphOps int64
}

// scaleFlag is --scale-kernel NAME=x, repeatable.
type scaleFlag map[string]float64

// String names the factors as they apply: multiplied ("*=2 × sgemm=0.5": sgemm kernels take 1×).
func (s scaleFlag) String() string {
	keys := make([]string, 0, len(s))
	for k, v := range s {
		keys = append(keys, fmt.Sprintf("%s=%g", k, v))
	}
	sort.Strings(keys)
	return strings.Join(keys, " × ")
}

func (s scaleFlag) Set(v string) error {
	k, x, ok := strings.Cut(v, "=")
	f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
	if !ok || k == "" || err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return fmt.Errorf("want NAME=factor (a kernel name or part of one, * for all; a factor of 0 or more), got %q", v)
	}
	k = strings.TrimSpace(k)
	if old, ok := s[k]; ok {
		f *= old // the same NAME twice multiplies too, as every factor that applies does
	}
	s[k] = f
	return nil
}

// whatifCmd replays a trace's dependency graph with one thing changed and compares the prediction
// with the trace.
func whatifCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("xfertop whatif", flag.ContinueOnError)
	fs.SetOutput(stderr)
	setUsage(fs, "xfertop whatif TRACE... [--scale-kernel NAME=x] [--kernels-from OTHER] [--comm algo=nvls] [--topology T] [--hosts N] [--set k=v] [flags]")
	o := whatifOpts{scale: scaleFlag{}, sets: setFlag{}}
	fs.StringVar(&o.topology, "topology", "", "re-time collectives with the engine's NCCL model on this topology (a built-in name or a file; default: a recording's own)")
	fs.IntVar(&o.hosts, "hosts", 0, "scale the topology to this many hosts: collectives over every rank of the trace span every rank of the topology")
	fs.Var(o.scale, "scale-kernel", "multiply the duration of the kernels whose name contains NAME by x, NAME=x (* for all; repeatable: a kernel several NAMEs match takes the product of their factors)")
	fs.StringVar(&o.comm, "comm", "", "force NCCL's choice for the re-timed collectives: algo="+commAlgos+"[,proto="+commProtos+"]")
	fs.StringVar(&o.from, "kernels-from", "", "take each kernel's duration (compute and NCCL, by exact name) from this other trace of the workload: its mean there over its mean here")
	fs.Var(&o.heal, "heal", "take one of a recording's faults out of the replay: the job with it removed (key=value pairs it must match, as --fault writes it: kind=nic_slow,host=37,nic=3; all: every fault) (repeatable)")
	fs.Var(o.sets, "set", "the same changes as knobs: nccl_algo=, nccl_proto=, kernels=x (all kernels scaled) (repeatable)")
	fs.BoolVar(&o.json, "json", false, "print the comparison as JSON")
	fs.BoolVar(&o.headless, "headless", false, "print the comparison instead of opening the console")
	fs.Int64Var(&o.maxGraphOps, "max-graph-ops", defaultMaxGraphOps, "refuse a trace without steps of more ops than this: its what-if holds its whole graph at once, about "+units.Bytes(wholeGraphOpBytes)+" an op (0: no bound; a trace with steps is replayed a step at a time, whatever its length)")
	o.limits.register(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagError(fs, err, stdout)
	}
	if len(pos) == 0 {
		return usageError("give the trace to replay (PyTorch profiler JSON, Nsight Systems .sqlite, or a recording)")
	}
	wo, err := o.options()
	if err != nil {
		return err
	}
	source := strings.Join(pos, ", ")
	// A first pass finds the steps (the windows the replay is cut into) and the kernels' mean
	// durations; the second replays the trace a window at a time, holding about two steps.
	first, err := planInput(ctx, pos, o.limits, true, stderr)
	if err != nil {
		return err
	}
	if err := oneJob(pos, first.warnings); err != nil {
		return err
	}
	if o.maxGraphOps < 0 {
		return usageError("--max-graph-ops %d: must not be negative (0: no bound)", o.maxGraphOps)
	}
	if err := wholeGraphBound(source, &first.plan, o.maxGraphOps); err != nil {
		return dataError(err)
	}
	if w := wholeGraphWarning(source, &first.plan); w != "" {
		fmt.Fprintln(stderr, "xfertop: warning: "+w)
	}
	meta := first.header.Meta
	if wo.Topology, err = o.resolveTopology(meta); err != nil {
		return err
	}
	if n := meta.Devices; wo.Topology.Hosts > 0 && n > wo.Topology.Devices() {
		by := "--topology " + wo.Topology.Name
		if o.hosts > 0 {
			by = fmt.Sprintf("--hosts %d", o.hosts)
		}
		return usageError("%s: %s has %d devices, fewer than the trace's %d: give more hosts or a larger topology", by, wo.Topology.String(), wo.Topology.Devices(), n)
	}
	wo.Recorded = recordedTopology(meta)
	wo.RunAlgo, _ = timeline.ParseNCCLAlgo(meta.Knobs["nccl_algo"])
	wo.RunProto, _ = timeline.ParseNCCLProto(meta.Knobs["nccl_proto"])
	wo.TraceDevices, wo.ScaleOut = meta.Devices, o.hosts > 0
	rf, err := recordedFaults(meta, o.heal)
	if err != nil {
		return err
	}
	if err := applyFaults(&wo, rf); err != nil {
		return err
	}
	o.healed = rf.healed
	if o.from != "" {
		other, err := planInput(ctx, []string{o.from}, o.limits, false, stderr)
		if err != nil {
			return err
		}
		if wo.ScaleExact = durationRatios(first.means(), other.means()); len(wo.ScaleExact) == 0 {
			return usageError("--kernels-from %s: no kernel of it is named as one of %s (names are matched exactly): nothing to take", o.from, source)
		}
		wo.ScaleDevice = durationRatios(first.deviceMeans(), other.deviceMeans())
		wo.FromDevice = map[whatif.DeviceKernel]float64{}
		for k, v := range other.deviceMeans() {
			if _, ok := wo.ScaleDevice[k]; ok {
				wo.FromDevice[k] = v[0] / v[1]
			}
		}
	}
	view := !o.json && !o.headless && interactive(stdout)
	var progress io.Writer
	if interactive(stderr) {
		progress = stderr
	}
	run, err := replayInput(ctx, pos, o.limits, first, wo, o.describe(wo), view, progress)
	if errors.Is(err, whatif.ErrOption) {
		return usageError("%s: %v", source, err)
	}
	var xe *exitError
	if errors.As(err, &xe) {
		return err
	}
	if err != nil {
		return dataError(fmt.Errorf("%s: %w", source, err))
	}
	c := whatifComparison(run, first.header, source, o.describe(wo), first.stepsFrom)
	c.Notes = append(c.Notes, faultNotes(rf, run.w, wo.Recorded.Hosts > 0)...)
	if wo.ScaleOut && run.w.Changed.Retimed > 0 {
		c.ScaledOut(wo.TraceDevices, wo.Topology.Devices())
	}
	if view {
		d := compareData(c, run.wins)
		d.Runs[0].Critical, d.Runs[1].Critical = criticalOps(run.w.Before, nil), criticalOps(run.w.After, run.order)
		return compareConsole(ctx, d)
	}
	return writeComparison(stdout, c, o.json)
}

// commAlgos and commProtos are what --comm takes: the algorithms and protocols the engine's NCCL
// model has (not CollNet).
const (
	commAlgos  = "ring|tree|nvls|nvlstree"
	commProtos = "ll|ll128|simple"
)

// options turns the flags into the replay's changes.
func (o *whatifOpts) options() (whatif.Options, error) {
	wo := whatif.Options{Scale: map[string]float64(o.scale)}
	// What each of algo and proto was set by, to name it in an error or a conflict.
	var algoBy, protoBy string
	set := func(by, k, v string) error {
		var ok bool
		switch k {
		case "algo":
			if strings.HasPrefix(strings.ToLower(v), "collnet") {
				return usageError("%s: the engine's NCCL model has no CollNet (it needs a network that reduces, SHARP): give %s", by, commAlgos)
			}
			if algoBy != "" {
				return usageError("%s and %s both force the algorithm: give one", algoBy, by)
			}
			wo.Algo, ok = timeline.ParseNCCLAlgo(v)
			algoBy = by
		case "proto":
			if protoBy != "" {
				return usageError("%s and %s both force the protocol: give one", protoBy, by)
			}
			wo.Proto, ok = timeline.ParseNCCLProto(v)
			protoBy = by
		}
		switch {
		case ok:
			return nil
		case strings.HasPrefix(by, "--set") && k == "algo":
			return usageError("%s: give nccl_algo=%s", by, commAlgos)
		case strings.HasPrefix(by, "--set"):
			return usageError("%s: give nccl_proto=%s", by, commProtos)
		}
		return usageError("%s: give algo=%s and/or proto=%s", by, commAlgos, commProtos)
	}
	for _, kv := range strings.Split(o.comm, ",") {
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		if err := set(fmt.Sprintf("--comm %q", kv), k, v); err != nil {
			return wo, err
		}
	}
	keys := make([]string, 0, len(o.sets))
	for k := range o.sets {
		keys = append(keys, k)
	}
	sort.Strings(keys) // errors in one order
	for _, k := range keys {
		v := o.sets[k]
		switch k {
		case "nccl_algo", "nccl_proto":
			if err := set(fmt.Sprintf("--set %s=%s", k, v), strings.TrimPrefix(k, "nccl_"), v); err != nil {
				return wo, err
			}
		case "kernels":
			if err := o.scale.Set("*=" + v); err != nil {
				return wo, usageError("--set kernels=%s: %v", v, err)
			}
		default:
			return wo, usageError("--set %s: not a what-if knob (nccl_algo, nccl_proto, kernels)", k)
		}
	}
	if o.hosts < 0 {
		return wo, usageError("--hosts %d: give a number of hosts above 0", o.hosts)
	}
	return wo, nil
}

// durationRatios is, for each kernel (compute or NCCL) name (or name on a device) both inputs
// ran, its mean duration in there over its mean in here (sums and counts by key).
func durationRatios[K comparable](here, there map[K][2]float64) map[K]float64 {
	ratios := map[K]float64{}
	for name, h := range here {
		if t, ok := there[name]; ok && h[0] > 0 {
			ratios[name] = (t[0] / t[1]) / (h[0] / h[1])
		}
	}
	return ratios
}

// recordedTopology is the topology the trace ran on, when it names a built-in one; zero otherwise
// (the unchanged replay then keeps the collectives' measured times).
// A run scaled with --hosts names its topology as topology.WithHosts does ("h100x8x2-32hosts"):
// the built-in one scaled to that many hosts. A topology whose devices are not the recording's is
// not taken.
func recordedTopology(m timeline.Meta) engine.Topology {
	t, err := topology.Builtin(m.Topology)
	if err != nil {
		base, hosts, ok := scaledName(m.Topology)
		if !ok {
			return engine.Topology{}
		}
		if t, err = topology.Builtin(base); err != nil {
			return engine.Topology{}
		}
		if t, err = topology.WithHosts(t, hosts); err != nil {
			return engine.Topology{}
		}
	}
	if m.Devices > 0 && t.Devices() != m.Devices {
		return engine.Topology{}
	}
	return t
}

// sameTopology says a and b are one topology (the recording's own is not a change).
func sameTopology(a, b engine.Topology) bool {
	return a.Name == b.Name && a.Hosts == b.Hosts && a.GPUsPerHost == b.GPUsPerHost
}

// scaledName splits a scaled topology's name, "NAME-Nhosts", into NAME and N.
func scaledName(name string) (string, int, bool) {
	i := strings.LastIndex(name, "-")
	if i <= 0 || !strings.HasSuffix(name, "hosts") {
		return "", 0, false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(name[i+1:], "hosts"))
	if err != nil || n < 1 {
		return "", 0, false
	}
	return name[:i], n, true
}

// resolveTopology is the topology collectives are re-timed on: --topology, else a recording's own
// when it names a built-in one; none (collectives keep their measured time) otherwise.
func (o *whatifOpts) resolveTopology(m timeline.Meta) (engine.Topology, error) {
	var t engine.Topology
	name := o.topology
	if name == "" {
		if t = recordedTopology(m); t.Hosts == 0 {
			if o.hosts > 0 {
				return t, usageError("--hosts %d needs --topology: the trace does not say what it ran on", o.hosts)
			}
			return t, nil
		}
		if base, _, ok := scaledName(t.Name); ok && o.hosts > 0 {
			name = base // scaled again from the built-in one, not from its scaled copy
		}
	}
	if name != "" {
		var err error
		if t, err = topology.Load(name); err != nil {
			return t, usageError("--topology %s: %v", name, err)
		}
	}
	if o.hosts > 0 {
		s, err := topology.WithHosts(t, o.hosts)
		if err != nil {
			return t, usageError("--hosts %d: topology %s: %v", o.hosts, t.Name, err)
		}
		t = s
	}
	return t, nil
}

// nothingChanged is B's name when no change was asked for.
const nothingChanged = "predicted: nothing changed"

// describe names the change for the comparison's B.
func (o *whatifOpts) describe(wo whatif.Options) string {
	var parts []string
	if len(o.healed) > 0 {
		parts = append(parts, "the job with "+faultList(o.healed)+" removed")
	}
	if len(o.scale) > 0 {
		parts = append(parts, "kernels "+o.scale.String())
	}
	if o.from != "" {
		parts = append(parts, fmt.Sprintf("the durations of %d kernels from %s", len(wo.ScaleExact), o.from))
	}
	if wo.Algo != 0 || wo.Proto != 0 {
		parts = append(parts, fmt.Sprintf("NCCL algo=%s proto=%s", cmpOr(wo.Algo.String(), "auto"), cmpOr(wo.Proto.String(), "auto")))
	}
	if wo.Topology.Hosts > 0 && !sameTopology(wo.Topology, wo.Recorded) {
		parts = append(parts, "collectives on "+wo.Topology.String())
	}
	if len(parts) == 0 {
		return nothingChanged
	}
	return "predicted: " + strings.Join(parts, ", ")
}

func cmpOr(s, d string) string {
	if s == "" || strings.HasPrefix(s, "algo(") || strings.HasPrefix(s, "proto(") {
		return d
	}
	return s
}

// wholeInput is an input read into memory: what analyze's critical path needs.
type wholeInput struct {
	header    *importers.Header
	events    []timeline.Event
	stepsFrom string // how the steps were found, when the input marks none (importers.Result.Steps)
}

// farApart is how the trace importers say an event lies more than a day from the others (left out).
const farApart = "from the trace's other events (more than 24 h)"

// oneJob refuses traces that are not one job's: when the import left events of one of them out for
// lying more than a day from the others' (runs made on different days), that file is named.
func oneJob(paths []string, warnings []string) error {
	if len(paths) < 2 {
		return nil
	}
	for _, w := range warnings {
		if strings.Contains(w, nsys.FarApart) { // a whole export: it names the others itself
			file, rest, _ := strings.Cut(w, ": its capture starts ")
			when, _, _ := strings.Cut(rest, ": "+nsys.FarApart)
			return dataError(fmt.Errorf("%s: its capture starts %s: not a capture of the same job (whatif replays the ranks of one run)", file, when))
		}
		if !strings.Contains(w, farApart) {
			continue
		}
		for _, p := range paths {
			if strings.HasPrefix(w, p+":") {
				_, span, _ := strings.Cut(w, "ts lies ")
				span, _, _ = strings.Cut(span, " from")
				return dataError(fmt.Errorf("%s: its events lie %s from the other traces': not a trace of the same job as %s (whatif replays the ranks of one run)", p, cmpOr(span, "more than a day"), strings.Join(others(paths, p), ", ")))
			}
		}
	}
	return nil
}

// others is paths without p.
func others(paths []string, p string) []string {
	var out []string
	for _, q := range paths {
		if q != p {
			out = append(out, q)
		}
	}
	return out
}

func (w *wholeInput) Begin(h *importers.Header) error { w.header = h; return nil }

func (w *wholeInput) Events(batch []timeline.Event) error {
	w.events = append(w.events, batch...)
	return nil
}

// inputCriticalPath is the mean critical path per step of an input, read again, whole: the chain
// that bound each step's end, or with hta, HTA's longest weighted path (whose host weights need a
// PyTorch trace's CPU operators, read once more).
func inputCriticalPath(ctx context.Context, paths []string, limits importLimits, likeHTA, hta bool, stderr io.Writer) (*report.CriticalPath, error) {
	in, err := readWholeWith(ctx, paths, limits, likeHTA, io.Discard) // its warnings were printed by the first read
	if err != nil {
		return nil, err
	}
	g, err := depgraph.Build(in.events, in.header.Strings)
	if err != nil {
		return nil, dataError(fmt.Errorf("%s: dependency graph: %w", strings.Join(paths, ", "), err))
	}
	if !hta {
		paths := g.CriticalPaths(nil, nil)
		p := criticalPath(whatif.Summarize(paths))
		p.Largest = pathLargest(g, paths, in.header.Strings, recordedTopology(in.header.Meta))
		return &p, nil
	}
	var ops depgraph.HostOps
	if in.header.Format == importers.FormatTrace {
		kopts := limits.options(likeHTA).Trace
		if ops, err = kineto.CPUOps(paths, kopts, in.header.Meta.EpochUnixNs); err != nil {
			return nil, dataError(err)
		}
	}
	p := criticalPath(whatif.Summarize(g.CriticalPathsHTA(nil, nil, ops)))
	p.Definition = "hta"
	return &p, nil
}

// criticalFlag is --critical-path: "" (not asked), "binding" (the flag alone) or "hta".
type criticalFlag string

func (c *criticalFlag) String() string   { return string(*c) }
func (c *criticalFlag) IsBoolFlag() bool { return true }

// Choices lists the values --critical-path takes.
func (c *criticalFlag) Choices() string {
	return "binding (the flag alone: the chain that bound each step's end) or hta (Holistic Trace Analysis's definition)"
}

func (c *criticalFlag) Set(v string) error {
	switch v {
	case "true", "binding":
		*c = "binding"
	case "false":
		*c = ""
	case "hta":
		*c = "hta"
	default:
		return fmt.Errorf("%q: want hta, binding, or nothing (the flag alone)", v) // reworded by choiceError
	}
	return nil
}

// readWholeWith reads a trace, an export or a recording whole (analyze --critical-path's), selecting
// what HTA does when likeHTA.
func readWholeWith(ctx context.Context, paths []string, limits importLimits, likeHTA bool, stderr io.Writer) (*wholeInput, error) {
	for _, p := range paths {
		if err := inputFile(p, "a trace or a recording"); err != nil {
			return nil, err
		}
	}
	opts := limits.options(likeHTA)
	opts.Context = ctx
	in := &wholeInput{}
	res, err := readInput(paths, opts, in, stderr)
	if err != nil {
		return nil, err
	}
	in.stepsFrom = res.Steps
	return in, nil
}

// whatifComparison compares the input as measured (A) with the changed replay (B).
func whatifComparison(run *whatifRun, h *importers.Header, source, change, stepsFrom string) *report.Comparison {
	w := run.w
	if w.Stats.Steps == 0 && len(w.Before) == 1 && len(w.After) == 1 && run.wins[0] != nil {
		// A trace without steps is one: the view aligns the timelines on it (the reports, which
		// count steps, are not told of it).
		for i, p := range [2]depgraph.Path{w.Before[0], w.After[0]} {
			run.wins[i].Emit(&timeline.Event{Kind: timeline.KindStep, Start: p.StartNs, End: p.EndNs, Device: timeline.NoDevice, Peer: timeline.NoDevice})
		}
	}
	a, base, b := run.reports[0], run.reports[1], run.reports[2]
	c := report.Compare(a, b, "measured: "+source, change)
	c.Command = "whatif"
	before, after := whatif.Summarize(w.Before), whatif.Summarize(w.After)
	report.AddCriticalPaths(c, criticalPath(before), criticalPath(after))
	c.DirectedOnly()
	unchangedPath := whatif.Summarize(w.Unchanged)
	floor, why := noiseFloor(a, base, w.Before, before, unchangedPath)
	c.Notes = whatifNotes(w, before, stepsFrom)
	c.SetNoiseFloor(floor, why)
	// Each row's own floor: what the unchanged replay already moves it by.
	unchanged := report.Compare(a, base, "", "")
	report.AddCriticalPaths(unchanged, criticalPath(before), criticalPath(unchangedPath))
	c.SetRowFloors(unchanged)
	if w.Differ == 0 && change != nothingChanged {
		c.Verdict = reachesNoOp(w.Changed)
	}
	return c
}

// reachesNoOp is the verdict on a change that re-timed no op (B is the unchanged replay): no
// prediction, and why, from what kept its measured time.
func reachesNoOp(r *whatif.Result) string {
	v := "no prediction: the change reaches no op of this trace (each op takes the time the unchanged replay gives it"
	if r.Retimed > 0 {
		v += fmt.Sprintf("; the %d collectives the NCCL model re-times take the same time with the change", r.Retimed)
	}
	if r.RetimedP2P > 0 {
		v += fmt.Sprintf("; the %d sends re-timed on their changed path take the same time with the change", r.RetimedP2P)
	}
	for _, k := range r.KeptReasons() {
		v += "; " + k
	}
	return v + ")"
}

// criticalOps is the set of the ops on paths, by their index among the events the compare view
// was given: A's are in node order (order nil), B's in the replay's order (the node of each).
func criticalOps(paths []depgraph.Path, order []int32) map[int64]bool {
	on := map[int32]bool{}
	for _, p := range paths {
		for _, n := range p.Nodes {
			on[n] = true
		}
	}
	set := make(map[int64]bool, len(on))
	if order == nil {
		for n := range on {
			set[int64(n)] = true
		}
		return set
	}
	for i, n := range order {
		if on[n] {
			set[int64(i)] = true
		}
	}
	return set
}

// criticalPath is a summary as the report shows it.
func criticalPath(s whatif.Summary) report.CriticalPath {
	p := report.CriticalPath{Steps: s.Steps, FirstLeft: s.FirstLeft, Whole: s.Whole, StepNs: s.StepNs, ByCategory: map[string]float64{}}
	for c, v := range s.ByCategory {
		p.ByCategory[c.String()] = v
	}
	return p
}

// noiseFloor is the change within which the comparison gives no verdict: the larger of 1%, the
// replay's own error on this trace (nothing changed, against the measurement) on the row the
// verdict is taken on (the mean step time after the first, where known), and the measured
// steps' spread (the median absolute deviation of their lengths along the critical path, over their
// median; the first step, which warms up, left out: robust to the odd slow step).
func noiseFloor(a, base *report.Report, before []depgraph.Path, measured, unchanged whatif.Summary) (float64, string) {
	errPct, what := 0.0, ""
	switch {
	case a.Steps.SteadyMeanNs != nil && base.Steps.SteadyMeanNs != nil && *a.Steps.SteadyMeanNs > 0:
		// The verdict's own row: the first step, which holds the setup, replays apart from the rest.
		errPct, what = 100*float64(*base.Steps.SteadyMeanNs-*a.Steps.SteadyMeanNs)/float64(*a.Steps.SteadyMeanNs), report.SteadyRow
	case a.Steps.MeanNs != nil && base.Steps.MeanNs != nil && *a.Steps.MeanNs > 0:
		errPct, what = 100*float64(*base.Steps.MeanNs-*a.Steps.MeanNs)/float64(*a.Steps.MeanNs), "mean step time"
	case measured.StepNs > 0:
		errPct, what = 100*(unchanged.StepNs-measured.StepNs)/measured.StepNs, "critical path length"
	}
	spread, spreadText := 0.0, "unknown: fewer than 2 measured steps after the first"
	if measured.FirstLeft || len(before) > 0 && before[0].Step >= 0 {
		before = before[1:] // the first step warms up, whether or not the path's mean left it out
	}
	if len(before) > 1 {
		lens := make([]float64, len(before))
		for i, p := range before {
			lens[i] = float64(p.EndNs - p.StartNs)
		}
		med := median(lens)
		for i := range lens {
			lens[i] = math.Abs(lens[i] - med)
		}
		if med > 0 {
			spread = 100 * median(lens) / med
			spreadText = fmt.Sprintf("%.1f%%", spread)
		}
	}
	floor := max(1, math.Abs(errPct), spread)
	return floor, fmt.Sprintf("the larger of 1%%, the unchanged replay's error on this trace (%s %+.2f%%) and the measured steps' spread (median absolute deviation over median: %s)",
		cmpOr(what, "unknown"), errPct, spreadText)
}

// median is xs' median; xs is sorted in place.
func median(xs []float64) float64 {
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// whatifNotes say how B was made.
func whatifNotes(w *whatif.Streamed, before whatif.Summary, stepsFrom string) []string {
	notes := []string{
		"method: the trace's dependency graph replayed (list scheduling over it; collectives timed by the engine's NCCL model where a topology and their sizes are known), not a run of the simulator",
		"graph: " + whatif.Dependencies(w.Stats),
	}
	// The job's steps, each marked by each of its ranks: "2 steps (4 marks on 2 ranks)".
	count := fmt.Sprint(w.Stats.Steps)
	if job := len(w.Before); job > 0 && job != w.Stats.Steps {
		count = fmt.Sprintf("%d (%d marks on %d ranks)", job, w.Stats.Steps, w.StepRanks)
	}
	steps := fmt.Sprintf("steps: %s from the trace's step markers", count)
	switch {
	case w.Stats.Steps == 0 && stepsFrom != "":
		steps = "steps: 1, the whole input (as the console shows it); " + stepsFrom
	case w.Stats.Steps == 0:
		steps = "steps: 1, the whole input: the trace marks none"
	case stepsFrom != "":
		steps = fmt.Sprintf("steps: %s; %s", count, stepsFrom)
	}
	if before.FirstLeft {
		steps += "; the critical path is averaged over the steps after the first (the first warms up)"
	}
	notes = append(notes, steps)
	r := w.Changed
	coll := fmt.Sprintf("collectives: %d re-timed by the NCCL model", r.Retimed)
	for _, k := range r.KeptReasons() {
		coll += ", " + k
	}
	notes = append(notes, coll)
	if r.RetimedP2P > 0 {
		notes = append(notes, fmt.Sprintf("sends and receives: %d re-timed on the path between their GPUs, which the change touches (the engine's model of a lone send: the measured transfer at the new path's rate over the old, plus its latency)", r.RetimedP2P))
	}
	for _, k := range r.NotForcedReasons() {
		notes = append(notes, "--comm "+k)
	}
	if r.Scaled > 0 || r.ScaledComm > 0 {
		n := fmt.Sprintf("kernels scaled: %d compute", r.Scaled)
		if r.ScaledComm > 0 {
			n += fmt.Sprintf(", %d NCCL", r.ScaledComm)
		}
		notes = append(notes, n)
	}
	notes = append(notes, fmt.Sprintf("critical path: %s per step measured (the chain of dependencies that bound each step's end; HTA's definition is analyze --critical-path=hta)", units.Dur(int64(before.StepNs))))
	return notes
}

// wholeGraphOps is the size of input past which whatif warns that, having no steps, it holds the
// whole input's graph at once; wholeGraphOpBytes is what it holds an op, the process's maximum
// resident set as `/usr/bin/time -v` reads it over the ops: 501–540 MiB for a 300,000-kernel trace
// without steps (600,003 ops, 875–943 bytes an op, the top kept so the estimate does not
// understate; docs/performance.md, "A trace without steps, resident"). The figure falls a little
// with the trace (about 1,060 bytes an op at 200,003 ops, 820 at 1,200,003: the runtime's fixed
// part spread wider); whatif's BenchmarkNoStepsMemory measures the replay's peak heap alone, 977
// bytes a graph op at 100,000 kernels. TestWholeGraphOpBytesDocumented holds the docs to it.
// defaultMaxGraphOps is --max-graph-ops' default, past which it refuses.
const (
	wholeGraphOps      = 100_000
	wholeGraphOpBytes  = 940
	defaultMaxGraphOps = 1_000_000
)

// wholeGraphBound refuses an input without steps of more than max ops (0: no bound): the what-if
// would hold its whole graph at once, whose memory grows with the trace. The error names the
// input, its ops and the memory they take, and the flag that raises the bound.
func wholeGraphBound(source string, p *whatif.Plan, max int64) error {
	if max == 0 || len(p.Params().Cuts) > 0 || p.Ops() <= max {
		return nil
	}
	return fmt.Errorf("%s marks no steps: its what-if would hold its whole graph at once, %d ops (about %s of memory), more than --max-graph-ops %d: "+
		"raise it with --max-graph-ops %d (or 0: no bound) if the memory is there, or give a trace with steps (PyTorch profiler ProfilerStep#N ranges, "+
		"an Nsight export's --step-range), which is replayed a step at a time", source, p.Ops(), units.Bytes(p.Ops()*wholeGraphOpBytes), max, p.Ops())
}

// wholeGraphWarning says, for an input without steps and with more than wholeGraphOps ops, how
// many ops the replay holds at once and about how much memory that takes, and what keeps it to
// a step's: "" for any other input.
func wholeGraphWarning(source string, p *whatif.Plan) string {
	if len(p.Params().Cuts) > 0 || p.Ops() <= wholeGraphOps {
		return ""
	}
	return fmt.Sprintf("%s marks no steps: the what-if holds its whole graph at once, %d ops (about %s of memory); "+
		"a trace with steps (PyTorch profiler ProfilerStep#N ranges, an Nsight export's --step-range) is replayed a step at a time",
		source, p.Ops(), units.Bytes(p.Ops()*wholeGraphOpBytes))
}
