package scenario_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/scenario"
	"github.com/xfertop/xfertop/timeline"
)

// alertSink keeps a run's alerts and peer waits and counts the rest, so a long run holds no events.
type alertSink struct {
	events int
	alerts []timeline.Event
	waits  []timeline.Event
}

func (s *alertSink) Emit(e *timeline.Event) {
	s.events++
	switch e.Kind {
	case timeline.KindAlert:
		s.alerts = append(s.alerts, *e)
	case timeline.KindPeerWait:
		if len(s.waits) < 64 {
			s.waits = append(s.waits, *e)
		}
	}
}

// soakRun runs a built-in scenario on the simulator with the knob settings, as `xfertop run` does.
func soakRun(t *testing.T, name string, sets map[string]string, seed int64, steps int) (*alertSink, *timeline.Strings, scenario.Result) {
	t.Helper()
	f, err := scenario.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := sim.TopologyByName(f.Topology)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Resolve(f, sets, topo)
	if err != nil {
		t.Fatal(err)
	}
	sink, strs := &alertSink{}, timeline.NewStrings()
	s, err := sim.New(sim.Config{Topology: topo, Seed: seed, Model: sim.DefaultModel()}, sink, strs)
	if err != nil {
		t.Fatal(err)
	}
	c := engine.NewClient(s, sink, sc.Options)
	res, err := sc.Run(context.Background(), c, sink, scenario.RunConfig{Steps: steps, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return sink, strs, res
}

// soakSettings returns every knob setting to soak for a scenario: the defaults, then each other
// allowed value of each enumerated knob, one knob at a time.
func soakSettings(f *scenario.File) []map[string]string {
	out := []map[string]string{nil}
	for _, k := range f.Knobs {
		for _, v := range k.Values {
			if v != k.Default {
				out = append(out, map[string]string{k.Name: v})
			}
		}
	}
	return out
}

// settingName names a subtest: the scenario, then the knob it sets or "defaults".
func settingName(name string, sets map[string]string) string {
	for k, v := range sets {
		return name + "/" + k + "=" + v
	}
	return name + "/defaults"
}

// soakMatrix is how many seeds and steps each setting of each healthy scenario runs: 20 × 600 in
// a full run, less with -short or under the race detector (which slows the simulator several
// times over; CI runs the full matrix once without it). allreduce-sweep's step is a whole sweep
// of 28 sizes up to 1 GiB (2,400 events), so it runs a tenth of the steps. An nccl-* sweep's
// step is 31 sizes up to 8 GiB × 20 iterations (about 5,000 collectives): it runs 2 steps of 2
// seeds (nothing in it is jittered: seeds change no time); tp-overlap and overlap, whose steps
// are heavier, an eighth and a quarter of the steps. An llm-train step on its 16 GPUs is 8
// layers × 8 microbatches forward and backward (about 6,000 events): it runs 2 steps of 2 seeds.
func soakMatrix(name string) (seeds, steps int) {
	seeds, steps = 20, 600
	if testing.Short() || raceEnabled {
		seeds, steps = 4, 150
	}
	switch {
	case name == "allreduce-sweep":
		steps /= 10
	// A step of these carries many times the pipeline's ops (20 × 600 took 46 s of tp-overlap and
	// 16 s of overlap against 2.7 s of the pipeline's on 2 cores): fewer steps still soak at least
	// the pipeline's ops, and what the test proves (no op slot's earlier op fires an alert on its
	// next one) depends on how many ops reuse the slots, not on how many steps hold them.
	case name == "tp-overlap":
		steps /= 8
	case name == "overlap":
		steps /= 4
	case strings.HasPrefix(name, "nccl-"), name == "llm-train":
		seeds, steps = 2, 2
	}
	return seeds, steps
}

// No healthy built-in scenario raises an alert, over many seeds and every knob setting. A false
// watchdog alert (an entry left by an op slot's earlier op firing on its next one) ended 17 of 20
// pipeline seeds within 600 steps before the simulator's op slots kept their generation.
func TestSoakNoFalseAlerts(t *testing.T) {
	for _, name := range scenario.BuiltinNames() {
		if name == "deadlock" {
			continue // it is meant to raise one: TestSoakDeadlockAtTimeout
		}
		f, err := scenario.Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, sets := range soakSettings(f) {
			t.Run(settingName(name, sets), func(t *testing.T) {
				t.Parallel()
				seeds, steps := soakMatrix(name)
				for seed := range int64(seeds) {
					sink, strs, res := soakRun(t, name, sets, seed+1, steps)
					if res.Err != nil || len(sink.alerts) > 0 || res.Steps != steps {
						msg := "no alert event"
						if len(sink.alerts) > 0 {
							a := sink.alerts[0]
							msg = fmt.Sprintf("%d alerts, the first at %.3f ms: %s", len(sink.alerts), float64(a.Start)/1e6, strs.Lookup(a.Label))
						}
						t.Fatalf("seed %d: ended after %d of %d steps (err %v); %s", seed+1, res.Steps, steps, res.Err, msg)
					}
				}
			})
		}
	}
}

// The deadlock scenario's send, whose receive is never posted, still raises exactly one alert at
// exactly its timeout: the alert comes when the send has waited the timeout for its peer, and the
// watchdog error says so.
func TestSoakDeadlockAtTimeout(t *testing.T) {
	for _, timeout := range []time.Duration{2 * time.Second, 250 * time.Millisecond, 10 * time.Second} {
		t.Run(timeout.String(), func(t *testing.T) {
			t.Parallel()
			seeds, _ := soakMatrix("deadlock")
			for seed := range int64(seeds) {
				sink, _, res := soakRun(t, "deadlock", map[string]string{"watchdog": timeout.String()}, seed+1, 0)
				var wd *engine.WatchdogError
				if !errors.As(res.Err, &wd) {
					t.Fatalf("seed %d: run ended with %v; want a watchdog error", seed+1, res.Err)
				}
				if wd.WaitedNs != timeout.Nanoseconds() || wd.Op != "send" {
					t.Errorf("seed %d: %s op waited %d ns; want a send that waited %d", seed+1, wd.Op, wd.WaitedNs, timeout.Nanoseconds())
				}
				if len(sink.alerts) != 1 || len(sink.waits) != 1 {
					t.Fatalf("seed %d: %d alerts and %d peer waits; want one of each", seed+1, len(sink.alerts), len(sink.waits))
				}
				a, w := sink.alerts[0], sink.waits[0]
				if a.Start != w.End || a.Start-w.Start != timeout.Nanoseconds() || a.Device != w.Device || a.Op != w.Op {
					t.Errorf("seed %d: alert at %d for op %d on device %d; peer wait %d..%d for op %d on device %d; want the alert %d ns after the wait began",
						seed+1, a.Start, a.Op, a.Device, w.Start, w.End, w.Op, w.Device, timeout.Nanoseconds())
				}
			}
		})
	}
}
