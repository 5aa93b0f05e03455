package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/importers"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/whatif"
)

// planned is the first pass over a what-if's input: what it is, where to cut it into windows,
// and its kernels' durations by name. It holds a few bytes a step and a kernel name, none of the
// ops (the steps' inference keeps a bounded sample of them: importers.Stream).
type planned struct {
	header    *importers.Header
	plan      whatif.Plan
	sums      map[uint32][2]float64   // each kernel label's total duration and count
	devSums   map[devLabel][2]float64 // the same on each device
	stepsFrom string
	warnings  []string // the import's (importers.Result.Warnings)
}

func (p *planned) Begin(h *importers.Header) error { p.header = h; return nil }

func (p *planned) Events(batch []timeline.Event) error {
	p.plan.Events(batch)
	for i := range batch {
		if e := &batch[i]; e.Kind == timeline.KindKernel || e.Kind == timeline.KindCollective {
			v := p.sums[e.Label]
			p.sums[e.Label] = [2]float64{v[0] + float64(e.Dur()), v[1] + 1}
			k := devLabel{e.Device, e.Label}
			d := p.devSums[k]
			p.devSums[k] = [2]float64{d[0] + float64(e.Dur()), d[1] + 1}
		}
	}
	return nil
}

// means is each kernel (compute or NCCL) name's total duration and count.
func (p *planned) means() map[string][2]float64 {
	m := map[string][2]float64{}
	for id, v := range p.sums {
		name := p.header.Strings.Lookup(id)
		w := m[name]
		m[name] = [2]float64{w[0] + v[0], w[1] + v[1]}
	}
	return m
}

// devLabel is a kernel label on one device.
type devLabel struct {
	dev   int32
	label uint32
}

// deviceMeans is each kernel name's total duration and count on each device.
func (p *planned) deviceMeans() map[whatif.DeviceKernel][2]float64 {
	m := map[whatif.DeviceKernel][2]float64{}
	for k, v := range p.devSums {
		dk := whatif.DeviceKernel{Device: k.dev, Name: p.header.Strings.Lookup(k.label)}
		w := m[dk]
		m[dk] = [2]float64{w[0] + v[0], w[1] + v[1]}
	}
	return m
}

// planInput reads paths once for their plan. Replayed inputs (twice) are regular files.
func planInput(ctx context.Context, paths []string, limits importLimits, twice bool, stderr io.Writer) (*planned, error) {
	for _, p := range paths {
		if err := inputFile(p, "a trace or a recording"); err != nil {
			return nil, err
		}
		if st, err := os.Stat(p); twice && err == nil && !st.Mode().IsRegular() {
			return nil, usageError("%s is not a regular file: whatif reads its input twice (a first pass finds the steps), so give a file, not a pipe", p)
		}
	}
	if err := refuseNCCLTestsLogs(paths); err != nil {
		return nil, err
	}
	opts := limits.options(false)
	opts.Context = ctx
	p := &planned{sums: map[uint32][2]float64{}, devSums: map[devLabel][2]float64{}}
	res, err := readInput(paths, opts, p, stderr)
	if err != nil {
		return nil, err
	}
	p.stepsFrom, p.warnings = res.Steps, res.Warnings
	return p, nil
}

// whatifRun is a what-if replayed: its totals and critical paths, the reports of the input as
// measured (A: analysed as analyze analyses it), the unchanged replay and the changed one (B), and
// for the console, each run's ops and the order of B's.
type whatifRun struct {
	w       *whatif.Streamed
	reports [3]*report.Report
	wins    [2]*timeline.Window
	order   []int32 // B's ops, by their index among A's (the console's only)
}

// analyzed folds the ops it is given into an analysis, and for the console into a window.
type analyzed struct {
	an  *analysis.Analyzer
	win *timeline.Window
}

func (a *analyzed) Emit(e *timeline.Event) {
	a.an.Emit(e)
	if a.win != nil {
		a.win.Emit(e)
	}
}

// replayInput reads paths a second time into a streamed what-if under wo, cut where first says,
// and analyses its three runs as they come. Where progress is not nil (standard error on a
// terminal) it draws how far the replay has got on one line there, rewritten in place and cleared
// at the end: at 1,024 GPUs the replay takes minutes (it replays every step twice, unchanged and
// changed), and nothing on screen read as a hang.
func replayInput(ctx context.Context, paths []string, limits importLimits, first *planned, wo whatif.Options, change string, view bool, progress io.Writer) (*whatifRun, error) {
	r := newReplayer(first.header.Meta, first.plan.Params(), wo, change, view)
	opts := limits.options(false)
	opts.Context = ctx
	if progress != nil {
		p := &progressLine{w: progress, verb: "replaying", name: fmt.Sprintf("%s (%s, twice: unchanged and changed)", strings.Join(paths, ", "), replayWindows(first))}
		opts.Progress = p.show
		defer p.clear()
	}
	if _, err := readInput(paths, opts, r, io.Discard); err != nil { // its warnings were printed by the first pass
		return nil, err
	}
	return r.finish()
}

// replayer is the sink of a what-if's second pass: it passes the input's events to a streamed
// what-if, built when the input's header comes, and analyses the three runs as they come.
type replayer struct {
	run    *whatifRun
	s      *whatif.Stream
	names  *timeline.Strings
	metas  [3]timeline.Meta
	outs   [3]*analyzed
	params whatif.StreamParams
	wo     whatif.Options
}

func newReplayer(m timeline.Meta, params whatif.StreamParams, wo whatif.Options, change string, view bool) *replayer {
	r := &replayer{run: &whatifRun{}, params: params, wo: wo}
	metaB := m
	metaB.Backend, metaB.Source = "whatif", change
	r.metas = [3]timeline.Meta{m, metaB, metaB}
	for i := range r.outs {
		r.outs[i] = &analyzed{an: analysis.New(r.metas[i])}
	}
	if view {
		r.run.wins[0], r.run.wins[1] = timeline.NewWindow(compareWindow, nil), timeline.NewWindow(compareWindow, nil)
		r.outs[2].win = r.run.wins[1]
	}
	r.params.KeepPathNodes = view
	return r
}

func (r *replayer) Begin(h *importers.Header) error {
	r.names = h.Strings
	// A's analysis takes the input itself (Events); the view's timeline gets the graph's ops, in
	// node order (criticalOps indexes them so).
	out := whatif.Outputs{Baseline: r.outs[1], Changed: r.outs[2]}
	if r.run.wins[0] != nil {
		out.Measured = r.run.wins[0]
	}
	if r.params.KeepPathNodes {
		out.ChangedOrder = &r.run.order
	}
	r.s = whatif.NewStream(h.Strings, r.wo, r.params, out)
	return nil
}

// Events analyses the input's events as analyze does (A), gives the communicator cache's hits
// and evictions to the replays' analyses too, and passes the events on to the replay. Those are
// not ops, so the replay does not move them, but the analysis needs them in B as in A: a
// communicator created in the first step and hit later is setup, not step time (analysis.Steps);
// it keeps their latest time a communicator, whatever the order they come in.
func (r *replayer) Events(batch []timeline.Event) error {
	for i := range batch {
		e := &batch[i]
		r.outs[0].Emit(e)
		if e.Kind == timeline.KindCommHit || e.Kind == timeline.KindCommEvict {
			r.outs[1].Emit(e)
			r.outs[2].Emit(e)
		}
	}
	return r.s.Events(batch)
}

// finish replays what is left and reports on the three runs.
func (r *replayer) finish() (*whatifRun, error) {
	w, err := r.s.Close()
	if err != nil {
		return nil, err
	}
	r.run.w = w
	for i, m := range r.metas {
		r.run.reports[i] = report.Build(r.outs[i].an.Result(r.names), m, report.Run{})
	}
	return r.run, nil
}

// replayWindows says what the replay goes through a piece at a time: the steps it is cut at.
func replayWindows(first *planned) string {
	switch n := len(first.plan.Params().Cuts); n {
	case 0:
		return "no steps: its whole graph at once"
	case 1:
		return "1 step"
	default:
		return fmt.Sprintf("%d steps", n)
	}
}
