// Package campaign measures how often and how fast the diagnosis (analysis/diagnosis) is right:
// it runs a scenario on a topology in the simulator, healthy and with one fault drawn per trial
// (kind, place, onset, severity from the trial's seed), folds every run's events into a diagnosis,
// and scores its top finding against the fault injected: culprit, kind, time from onset to
// finding. A fault that changes nothing measurable (the run takes as long as healthy and nothing
// hangs) is counted undetectable, not as a miss.
package campaign

import (
	"context"
	"errors"
	"fmt"
	"github.com/xfertop/xfertop/analysis/hostmap"
	"math"
	"math/rand"
	"slices"

	"github.com/xfertop/xfertop/analysis/diagnosis"
	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/scenario"
	"github.com/xfertop/xfertop/timeline"
)

// Config is one campaign.
type Config struct {
	// Scenario is resolved afresh for each run: a resolved scenario keeps its run's streams.
	Scenario *scenario.File
	// Knobs set the scenario's knobs (key=value, as run's --set); nil: its defaults.
	Knobs    map[string]string
	Topology engine.Topology
	Trials   int   // fault trials
	Healthy  int   // healthy runs (false findings on them measure precision)
	Steps    int   // steps per run (at least 3: a healthy step, the onset's, one after)
	Seed     int64 // the first trial's seed; trial i uses Seed+i
	// Kinds are the fault kinds drawn from (nil: DefaultKinds, and fabric_slow where the topology
	// has more than one rail group, less the kinds the scenario cannot show there: see Unshown).
	Kinds []fault.Kind
	// Progress, when set, is called after each run.
	Progress func(done, total int, t *Trial)
	// Unshown, when set, is told after the healthy reference run, before any trial, of the kinds
	// the scenario cannot show on the topology (a healthy run does nothing they act on: PCIe a
	// generation down in a job that moves nothing over PCIe). Of the default kinds they are left
	// out (leftOut); kinds given in Kinds are drawn all the same, their trials undetectable.
	Unshown func(kinds []Unshown, leftOut bool)
}

// DefaultKinds are the kinds a campaign draws from on every topology.
var DefaultKinds = []fault.Kind{fault.NICSlow, fault.NICFlap, fault.NVLinkSlow, fault.GPUSlow, fault.HostSlow, fault.PCIeGen, fault.Hang, fault.MissingRank}

// Trial is one run and how the diagnosis did on it.
type Trial struct {
	Seed         int64
	Fault        *fault.Fault // nil: healthy
	Slowdown     float64      // the run's time over the healthy run's, minus 1; not a slowdown when Ended (a hung run stops early)
	BusyChange   float64      // the largest change of one device's busy time from the healthy run's (relative)
	LaunchChange float64      // the largest change of one device's launch-to-start time (relative)
	Ended        error        // a hang's watchdog, or nil
	Findings     []diagnosis.Finding
	Events       int64
	// KernelChange and LinkChange are the largest changes of one device's kernel time and of its
	// links' busy time (NVLink, NIC, PCIe; as its port counters say), relative: a GPU whose
	// kernels take 3× as long inside a step of communication, or a NIC busy 10× as long whose
	// all-to-all still ends with the hot expert's, changes its busy time by less than 1%.
	KernelChange, LinkChange float64
	// Scores (fault trials).
	Detectable   bool
	Culprit      bool  // the top finding names the faulty place
	KindRight    bool  // and the right kind
	HostRight    bool  // the top finding names the faulty place's host
	Found        bool  // any finding at all
	LatencyNs    int64 // the top finding's At − the fault's onset
	LatencySteps int   // steps ended from the onset to the finding (1: the onset's own step)
	False        int   // findings that name another place
}

// run executes one run of cfg with faults, folding its events into a diagnosis.
func run(ctx context.Context, cfg *Config, seed int64, faults []fault.Fault) (*runOut, error) {
	topo := cfg.Topology
	n := topo.Devices()
	out := &runOut{busy: make([]int64, n), lead: make([]int64, n), kern: make([]int64, n), link: make([]int64, n)}
	strs := timeline.NewStrings()
	d := diagnosis.New(hostmap.ByID(topo.GPUsPerHost))
	// The line rates the run's meta gives every other consumer of the simulator (session.SimPeaks).
	m := sim.ModelOf(topo)
	var peaks [timeline.NumPeaks]float64
	peaks[timeline.PeakPCIe], peaks[timeline.PeakNVLink], peaks[timeline.PeakNIC], peaks[timeline.PeakHBM] = m.PCIeBps, m.NVLinkBps, m.NICBps, m.HBMBps
	d.SetLinkPeaks(peaks)
	sink := &sink{d: d, out: out}
	s, err := sim.New(sim.Config{Topology: topo, Seed: seed, Model: m, Faults: faults}, sink, strs)
	if err != nil {
		return nil, err
	}
	sc, err := scenario.Resolve(cfg.Scenario, cfg.Knobs, topo)
	if err != nil {
		return nil, err
	}
	opts := sc.Options
	// No watchdog: a hang then stops the simulation where nothing can move any more, and what is in
	// flight stays as a console polling it during the hang would see it (a watchdog would fail
	// the waiting ops). Pending below reads it.
	opts.WatchdogNs = 0
	c := engine.NewClient(s, sink, opts)
	res, err := sc.Run(ctx, c, sink, scenario.RunConfig{Steps: cfg.Steps, Seed: seed})
	if err == nil {
		err = res.Err
	}
	if err != nil {
		var wd *engine.WatchdogError
		var dl *engine.DeadlockError
		if !errors.As(err, &wd) && !errors.As(err, &dl) {
			return nil, err
		}
		out.ended = err
		// What a console polling the run's ops in flight would have seen: the waits are still
		// under way when the run stops.
		// Nothing moves after a deadlock: a poll at any later time sees this state, so Pending is
		// given a time past every threshold and dates each hang when its evidence was complete.
		// After the watchdog (when it is armed), at the last time an op was seen running.
		inflight := s.InFlight(nil)
		now := int64(math.MaxInt64 / 2)
		if dl == nil {
			now = diagnosis.LastSeen(inflight)
		}
		d.Pending(now, inflight)
	}
	out.end = s.Now()
	out.findings = d.Result(strs)
	return out, nil
}

type runOut struct {
	end      int64
	steps    []int64 // each step's end
	ended    error
	findings []diagnosis.Finding
	events   int64
	shows    shows // what the run did that faults act on
	// Per device: the time its ops kept it busy (a fault that acts on its links or kernels changes
	// it) and the ops' time from launch to start (a fault that delays its launches changes it).
	busy, lead []int64
	// kern is per device its kernels' time, link its links' busy time (KindLinkBytes' Op).
	kern, link []int64
}

type sink struct {
	d   *diagnosis.Diagnosis
	out *runOut
}

func (k *sink) Emit(e *timeline.Event) {
	k.out.events++
	k.out.shows.add(e)
	if e.Kind == timeline.KindLinkBytes && e.Device >= 0 && int(e.Device) < len(k.out.link) {
		if l, _, ok := timeline.UnpackLink(e.Sub); ok && (l == timeline.PeakNIC || l == timeline.PeakNVLink || l == timeline.PeakPCIe) {
			k.out.link[e.Device] += int64(e.Op)
		}
	}
	if e.Kind.IsBusy() && e.Device >= 0 && int(e.Device) < len(k.out.busy) {
		if e.Kind == timeline.KindKernel {
			k.out.kern[e.Device] += e.Dur()
		}
		k.out.busy[e.Device] += e.Dur()
		if e.Queued >= 0 {
			k.out.lead[e.Device] += e.Start - e.Queued
		}
	}
	if e.Kind == timeline.KindStep && e.Status == timeline.StatusOK {
		k.out.steps = append(k.out.steps, e.End)
	}
	k.d.Add(e)
}

// Run runs the campaign: a healthy reference run, cfg.Healthy healthy runs with other seeds and
// cfg.Trials fault trials.
func Run(ctx context.Context, cfg Config) ([]Trial, error) {
	if cfg.Steps < 3 {
		cfg.Steps = 3
	}
	defaults := len(cfg.Kinds) == 0
	if defaults {
		cfg.Kinds = DefaultKinds
		if cfg.Topology.RailGroups() > 1 {
			// Only flows between rail groups cross a leaf's ports to the spines.
			cfg.Kinds = append(slices.Clip(DefaultKinds), fault.FabricSlow)
		}
	}
	total := cfg.Trials + cfg.Healthy
	ref, err := run(ctx, &cfg, cfg.Seed, nil)
	if err != nil {
		return nil, fmt.Errorf("healthy reference run: %w", err)
	}
	if ref.ended != nil || len(ref.steps) < cfg.Steps {
		return nil, fmt.Errorf("healthy reference run did not complete its %d steps: %v", cfg.Steps, ref.ended)
	}
	if un := ref.shows.unshown(cfg.Kinds); len(un) > 0 {
		leftOut := defaults && len(un) < len(cfg.Kinds) // never all of them
		if leftOut {
			cfg.Kinds = slices.DeleteFunc(slices.Clone(cfg.Kinds), func(k fault.Kind) bool {
				return slices.ContainsFunc(un, func(u Unshown) bool { return u.Kind == k })
			})
		}
		if cfg.Unshown != nil {
			cfg.Unshown(un, leftOut)
		}
	}
	var trials []Trial
	for i := range total {
		if err := ctx.Err(); err != nil {
			return trials, err
		}
		seed := cfg.Seed + int64(i)
		var t Trial
		if i < cfg.Healthy {
			t, err = healthy(ctx, &cfg, seed)
		} else {
			t, err = faulty(ctx, &cfg, seed, ref)
		}
		if err != nil {
			return trials, fmt.Errorf("trial %d (seed %d): %w", i+1, seed, err)
		}
		trials = append(trials, t)
		if cfg.Progress != nil {
			cfg.Progress(i+1, total, &trials[len(trials)-1])
		}
	}
	return trials, nil
}

func healthy(ctx context.Context, cfg *Config, seed int64) (Trial, error) {
	o, err := run(ctx, cfg, seed, nil)
	if err != nil {
		return Trial{}, err
	}
	return Trial{Seed: seed, Findings: o.findings, False: len(o.findings), Ended: o.ended, Events: o.events}, nil
}

// Draw draws the fault of a trial's seed: kind, place, onset (in the second step of the healthy
// reference, so that one healthy step precedes it) and severity. The place is among those the
// healthy reference used for what the kind acts on (used; nil: any): a place drawn elsewhere is
// drawn again among them, so a scenario that uses every device draws as it did without them.
func Draw(seed int64, topo engine.Topology, kinds []fault.Kind, stepEnds []int64, used *Places) fault.Fault {
	rng := rand.New(rand.NewSource(seed))
	f := fault.Fault{Kind: kinds[rng.Intn(len(kinds))], Host: rng.Intn(topo.Hosts), GPU: -1, NIC: -1}
	s0, s1 := stepEnds[0], stepEnds[1]
	f.At = s0 + rng.Int63n(max(s1-s0, 1))
	switch f.Kind {
	case fault.NICSlow, fault.NICFlap:
		f.NIC = rng.Intn(max(topo.NICs.PerHost, 1))
		f.Factor = 0.1 + 0.5*rng.Float64()
		if f.Kind == fault.NICFlap {
			f.Factor = 0
			f.Period = int64(10e6 + rng.Int63n(190e6))
		}
	case fault.NVLinkSlow, fault.GPUSlow, fault.PCIeGen, fault.Hang, fault.MissingRank:
		f.GPU = rng.Intn(topo.GPUsPerHost)
		f.Factor = 0.1 + 0.5*rng.Float64()
		switch f.Kind {
		case fault.GPUSlow:
			f.Factor = 0.5 + 0.45*rng.Float64()
		case fault.PCIeGen:
			f.Factor = 0.5
		case fault.MissingRank:
			f.At = 0 // communicators are made in the first step
		}
	case fault.HostSlow:
		f.Delay = int64(10e3 + rng.Int63n(190e3))
	case fault.FabricSlow:
		f.Host = -1
		f.Group, f.Rail = rng.Intn(topo.RailGroups()), rng.Intn(topo.GPUsPerHost)
		f.Factor = 0.1 + 0.5*rng.Float64()
	}
	if used != nil {
		place(&f, rng, topo, used.devices(f.Kind))
	}
	return f
}

// place moves f to one of devs (the devices that did what its kind acts on) when none of the
// devices it acts on is among them.
func place(f *fault.Fault, rng *rand.Rand, topo engine.Topology, devs []int32) {
	if len(devs) == 0 || topo.GPUsPerHost <= 0 {
		return
	}
	for _, d := range f.Devices(topo) {
		if _, ok := slices.BinarySearch(devs, int32(d)); ok {
			return
		}
	}
	d := int(devs[rng.Intn(len(devs))])
	f.Host = d / topo.GPUsPerHost
	local := d % topo.GPUsPerHost
	switch {
	case f.NIC >= 0:
		f.NIC = local * max(topo.NICs.PerHost, 1) / topo.GPUsPerHost
	case f.GPU >= 0:
		f.GPU = local
	}
}

func faulty(ctx context.Context, cfg *Config, seed int64, ref *runOut) (Trial, error) {
	f := Draw(seed, cfg.Topology, cfg.Kinds, ref.steps, &ref.shows.used)
	o, err := run(ctx, cfg, cfg.Seed, []fault.Fault{f})
	if err != nil {
		return Trial{}, err
	}
	t := Trial{Seed: seed, Fault: &f, Findings: o.findings, Ended: o.ended, Events: o.events}
	t.measure(o, ref, cfg.Topology.GPU.KernelJitter)
	t.Found = len(o.findings) > 0
	if t.Found {
		top := o.findings[0]
		t.Culprit = culpritRight(&f, &top, cfg.Topology)
		t.HostRight = int(top.Host) == f.Host
		if f.Kind == fault.FabricSlow {
			t.HostRight = t.Culprit // a switch's place is its leaf, the culprit itself
		}
		t.KindRight = t.Culprit && kindRight(&f, &top)
		t.LatencyNs = top.At - f.At
		for _, end := range o.steps {
			if end > f.At && end <= top.At {
				t.LatencySteps++
			}
		}
		if o.ended != nil && (len(o.steps) == 0 || top.At > o.steps[len(o.steps)-1]) {
			t.LatencySteps++ // found in the step the hang stopped
		}
	}
	for i := range o.findings {
		if !culpritRight(&f, &o.findings[i], cfg.Topology) {
			t.False++
		}
	}
	return t, nil
}

// measure sets what the fault changed against the healthy reference run, and whether that is
// anything measurable (1% of the run, or of one device's busy time, launch-to-start time or links'
// busy time, or of its kernel time beyond what a reshuffle of the kernels' jitter can move it; or
// a hang).
func (t *Trial) measure(o, ref *runOut, jitter float64) {
	t.Slowdown = float64(o.end)/float64(ref.end) - 1
	t.BusyChange, t.LaunchChange = maxChange(o.busy, ref.busy), maxChange(o.lead, ref.lead)
	t.KernelChange, t.LinkChange = maxChange(o.kern, ref.kern), maxChange(o.link, ref.link)
	t.Detectable = o.ended != nil || math.Abs(t.Slowdown) >= 0.01 || t.BusyChange >= 0.01 || t.LaunchChange >= 0.01 ||
		t.KernelChange >= kernelChange(jitter) || t.LinkChange >= 0.01
}

// kernelChange is how much a device's kernel time must change to be the fault's doing: the
// simulator draws each kernel's jitter (± jitter) in the order kernels start, so a fault that only
// moves launches (a slow host) deals the same kernels other draws, which can move a device's
// kernel time by up to twice the jitter; 1% beyond that.
func kernelChange(jitter float64) float64 { return 2*jitter + 0.01 }

func culpritRight(f *fault.Fault, x *diagnosis.Finding, topo engine.Topology) bool {
	if f.Kind == fault.FabricSlow {
		return x.Kind == diagnosis.SlowLink && x.Link == timeline.LinkFabric && x.Port == timeline.PackPort(f.Group, f.Rail)
	}
	if f.Kind == fault.HostSlow {
		// A whole host slow is named by its host, its rank unknown (all of them).
		return x.Host >= 0 && int(x.Host) == f.Host && (x.Rank >= 0 || f.GPU < 0)
	}
	if x.Rank < 0 {
		return false
	}
	for _, d := range f.Devices(topo) {
		if int32(d) == x.Rank {
			return true
		}
	}
	return false
}

func kindRight(f *fault.Fault, x *diagnosis.Finding) bool {
	switch f.Kind {
	case fault.NICSlow, fault.NICFlap:
		return x.Kind == diagnosis.SlowLink && x.Link == timeline.PeakNIC
	case fault.NVLinkSlow:
		return x.Kind == diagnosis.SlowLink && x.Link == timeline.PeakNVLink
	case fault.PCIeGen:
		return x.Kind == diagnosis.SlowLink && x.Link == timeline.PeakPCIe
	case fault.FabricSlow:
		return x.Kind == diagnosis.SlowLink && x.Link == timeline.LinkFabric
	case fault.GPUSlow:
		return x.Kind == diagnosis.SlowGPU
	case fault.HostSlow:
		return x.Kind == diagnosis.SlowHost
	case fault.Hang:
		return x.Kind == diagnosis.Hang
	case fault.MissingRank:
		return x.Kind == diagnosis.MissingRank
	}
	return false
}

// maxChange is the largest relative change of one device's figure from the reference run's (a
// device's, not the sum's: a fault on one GPU of a thousand changes the sum by a thousandth).
// Changes under 10 µs are not counted: a device that did almost nothing changes by jitter alone.
func maxChange(got, ref []int64) float64 {
	x := 0.0
	for d := range min(len(got), len(ref)) {
		diff := got[d] - ref[d]
		if diff < 0 {
			diff = -diff
		}
		if ref[d] > 0 && diff >= 10_000 {
			x = max(x, float64(diff)/float64(ref[d]))
		}
	}
	return x
}
