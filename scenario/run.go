package scenario

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/fileerr"
	"github.com/xfertop/xfertop/timeline"
)

// Scenario is a parsed file with its knobs applied and every phase built and validated.
type Scenario struct {
	File     *File
	Knobs    map[string]string
	Topology string
	Options  engine.Options
	phases   []phase
	lines    []int
}

// Resolve applies sets (knob overrides) to f, reads its engine settings on top of engine defaults,
// and builds its phases for topo. Every problem is an *Error naming the file and line.
func Resolve(f *File, sets map[string]string, topo engine.Topology) (*Scenario, error) {
	knobs, eng, phases, err := f.Apply(sets)
	if err != nil {
		return nil, err
	}
	opts, err := engineOptions(f.Source, eng)
	if err != nil {
		return nil, err
	}
	sc := &Scenario{File: f, Knobs: knobs, Topology: topo.Name, Options: opts}
	for _, ph := range phases {
		b, ok := builders[ph.Kind]
		if !ok {
			return nil, fileerr.At(f.Source, ph.Line, "unknown phase %q (known: %s)", ph.Kind, strings.Join(PhaseKinds(), ", "))
		}
		p, err := b(newParams(f.Source, ph.Kind, ph.Line, ph.Params), topo)
		if err != nil {
			return nil, err
		}
		sc.phases = append(sc.phases, p)
		sc.lines = append(sc.lines, ph.Line)
	}
	return sc, nil
}

// engineOptions reads the engine section.
func engineOptions(src string, ps []Param) (engine.Options, error) {
	o := engine.DefaultOptions()
	p := newParams(src, "engine", 0, ps)
	o.EarlyEnqueue = p.boolean("early_enqueue", o.EarlyEnqueue)
	switch p.str("d2d_priority", "high", "high", "normal") {
	case "high":
		o.D2DPriority = engine.PriorityHigh
	default:
		o.D2DPriority = engine.PriorityNormal
	}
	if !p.boolean("comm_cache", true) {
		o.CommCacheSize = 0
	} else {
		o.CommCacheSize = int(p.integer("cache_size", int64(o.CommCacheSize), 1, 1<<20))
	}
	p.used["cache_size"] = true
	o.RecvPoolSlots = int(p.integer("recv_pool_slots", int64(o.RecvPoolSlots), 0, 1<<16))
	o.RecvPoolSlotBytes = p.size("recv_pool_slot_bytes", o.RecvPoolSlotBytes)
	o.CollMemBytes = p.size("coll_mem_bytes", o.CollMemBytes)
	o.BatchOps = int(p.integer("batch_ops", int64(o.BatchOps), 1, 1<<16))
	o.BatchWindowNs = p.dur("batch_window", o.BatchWindowNs)
	o.WatchdogNs = p.dur("watchdog", o.WatchdogNs)
	// As NCCL_ALGO and NCCL_PROTO: one name forces it, auto lets the tuner choose.
	o.NCCLAlgo, _ = timeline.ParseNCCLAlgo(p.str("nccl_algo", "auto", "auto", "ring", "tree", "nvls", "nvlstree"))
	o.NCCLProto, _ = timeline.ParseNCCLProto(p.str("nccl_proto", "auto", "auto", "ll", "ll128", "simple"))
	o.Graphs = p.boolean("graphs", o.Graphs)
	return o, p.done()
}

// RunConfig bounds a run: Steps (0: the scenario's own) or Duration of simulated/device time
// (0: no limit), whichever ends first.
type RunConfig struct {
	Steps    int
	Duration time.Duration
	Seed     int64
}

// Result says how a run ended.
type Result struct {
	Steps int   // steps completed
	Err   error // the error that ended the run early (a watchdog alert, a deadlock, a cancel), or nil
}

// runner carries what phases need while they issue a step.
type runner struct {
	c     *engine.Client
	topo  engine.Topology
	seed  int64
	pairs map[[2]int]uint64
}

// pairID returns the op id linking stage s's send of microbatch m with stage s+1's receive.
func (r *runner) pairID(s, m int) uint64 {
	k := [2]int{s, m}
	if id, ok := r.pairs[k]; ok {
		return id
	}
	id := r.c.NewOpID()
	r.pairs[k] = id
	return id
}

func (r *runner) resetPairs() { clear(r.pairs) }

// issueStep issues one step's work: as launches, or with graphs on, as the graph captured from the
// second step (the first runs as is: it creates the communicators, which no graph may hold).
func (sc *Scenario) issueStep(r *runner, step int, graph **engine.Graph) error {
	c := r.c
	if sc.Options.Graphs && *graph != nil {
		return c.LaunchGraph(*graph)
	}
	capture := sc.Options.Graphs && step > 0
	if capture {
		if err := c.BeginCapture(sc.File.Name + " step"); err != nil {
			return fmt.Errorf("%s: step %d: graphs=on: %w", sc.File.Source, step, err)
		}
	}
	for i, ph := range sc.phases {
		if err := ph.issue(r, step); err != nil {
			if capture {
				_, _ = c.EndCapture() // the phase's own error is the one to report
			}
			return fmt.Errorf("%s:%d: step %d: %w", sc.File.Source, sc.lines[i], step, err)
		}
	}
	if !capture {
		return nil
	}
	g, err := c.EndCapture()
	if err != nil {
		return fmt.Errorf("%s: step %d: graphs=on: %w", sc.File.Source, step, err)
	}
	*graph = g
	return c.LaunchGraph(g)
}

// Run executes the scenario on c, emitting a step event per step to sink. A run that ends with a
// watchdog alert or a deadlock returns normally with Result.Err set: what happened before is all
// recorded. Errors building a step are returned as err. A resolved Scenario runs on one client:
// its phases keep what they made there (streams), so a run on another client resolves it anew.
func (sc *Scenario) Run(ctx context.Context, c *engine.Client, sink timeline.Sink, cfg RunConfig) (Result, error) {
	steps := cfg.Steps
	if steps <= 0 {
		steps = sc.File.Steps
		if cfg.Duration > 0 {
			steps = 1 << 30
		}
	}
	r := &runner{c: c, topo: c.Topology(), seed: cfg.Seed, pairs: map[[2]int]uint64{}}
	b := c.Backend()
	begin := b.Now()
	label := c.Strings().ID("step")
	var res Result
	var graph *engine.Graph
	for step := range steps {
		if cfg.Duration > 0 && b.Now()-begin >= cfg.Duration.Nanoseconds() {
			break
		}
		start := b.Now()
		if err := sc.issueStep(r, step, &graph); err != nil {
			return res, err
		}
		err := c.Run(ctx)
		e := timeline.Event{Kind: timeline.KindStep, Start: start, End: b.Now(), Device: timeline.NoDevice, Peer: timeline.NoDevice, Aux: uint32(step), Label: label}
		if err != nil {
			e.Status = timeline.StatusError
		}
		sink.Emit(&e)
		if err != nil {
			var wd *engine.WatchdogError
			var dl *engine.DeadlockError
			if errors.As(err, &wd) || errors.As(err, &dl) || errors.Is(err, engine.ErrCanceled) {
				res.Err = err
				return res, nil
			}
			return res, err
		}
		res.Steps++
	}
	return res, nil
}
