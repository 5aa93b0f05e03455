package diagnosis_test

import (
	"context"
	"errors"
	"github.com/xfertop/xfertop/analysis/hostmap"
	"math"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis/diagnosis"
	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/timeline"
)

// simRun builds an h100x8 simulator with the faults given, lets post enqueue work, runs it to its
// end and diagnoses it as a headless run does: its events, then what is in flight when it
// stopped (at any later time after a deadlock, at the last time seen after the watchdog).
func simRun(t *testing.T, post func(c *engine.Client), specs ...string) ([]diagnosis.Finding, error) {
	t.Helper()
	tp, err := sim.TopologyByName("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	var fs []fault.Fault
	for _, sp := range specs {
		f, err := fault.Parse(sp)
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, f)
	}
	store := timeline.NewStore(nil)
	s, err := sim.New(sim.Config{Topology: tp, Seed: 1, Model: sim.ModelOf(tp), Faults: fs}, store, store.Strings)
	if err != nil {
		t.Fatal(err)
	}
	c := engine.NewClient(s, store, engine.DefaultOptions())
	post(c)
	runErr := c.Run(context.Background())
	d := diagnosis.New(hostmap.ByID(tp.GPUsPerHost))
	evs := store.Events()
	for i := range evs {
		d.Add(&evs[i])
	}
	inflight := s.InFlight(nil)
	now := diagnosis.LastSeen(inflight)
	var dl *engine.DeadlockError
	if errors.As(runErr, &dl) {
		now = math.MaxInt64 / 2
	}
	d.Pending(now, inflight)
	return d.Result(store.Strings), runErr
}

// A rank hung inside a collective of ranks 0–3 (mode=in) holds them all inside it; ranks 4–7,
// waiting in the next collective of all eight for ranks 0–3, are not the root. The finding says
// that every rank entered the first and none finished, and names rank 3, whose part made no
// progress (the simulator reports it stalled, as NCCL's proxy steps would); the same fault before
// it (the default) says rank 3 never entered it.
func TestSimHangInVersusBefore(t *testing.T) {
	post := func(c *engine.Client) {
		if _, err := c.Collective(timeline.CollAllReduce, []engine.DeviceID{0, 1, 2, 3}, 1<<20, "tp"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Collective(timeline.CollAllGather, []engine.DeviceID{0, 1, 2, 3, 4, 5, 6, 7}, 1<<20, "dp"); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		mode, culprit, evidence string
		rank                    int32
	}{
		{mode: "in", rank: 3, culprit: "rank 3 (host 0 GPU 3)",
			evidence: "all_reduce #1 on communicator 1: ranks 0, 1, 2, 3 entered it and are stuck inside: none finished in 1.00 s; no rank is missing from it; rank 3's part made no progress (its kernel in it never finished)"},
		{mode: "before", rank: 3, culprit: "rank 3 (host 0 GPU 3)", evidence: "all_reduce #1 on communicator 1: 3 ranks waited"},
	} {
		fs, err := simRun(t, post, "kind=hang,rank=3,coll=all_reduce,mode="+c.mode)
		if err == nil {
			t.Fatalf("mode=%s: the run ended normally", c.mode)
		}
		if len(fs) != 1 || fs[0].Kind != diagnosis.Hang || fs[0].Rank != c.rank || fs[0].Culprit() != c.culprit || !strings.Contains(fs[0].Evidence, c.evidence) {
			for _, f := range fs {
				t.Logf("%s", f.String())
			}
			t.Fatalf("mode=%s: %d findings; want one hang of %s saying %q", c.mode, len(fs), c.culprit, c.evidence)
		}
	}
}

// Rank 3 receives from 5 before sending to it, and 5 receives from 3 before sending to it: each
// waits in its receive for a send queued behind the other's. The watchdog ends one wait; the
// diagnosis names the cycle, not a rank that "never posted".
func TestSimRecvDeadlock(t *testing.T) {
	fs, err := simRun(t, func(c *engine.Client) {
		s3, _ := c.NewStream(3, engine.PriorityNormal)
		s5, _ := c.NewStream(5, engine.PriorityNormal)
		for _, x := range []struct {
			s        engine.StreamID
			peer     engine.DeviceID
			recv, sd uint64
		}{{s3, 5, 1, 2}, {s5, 3, 2, 1}} {
			if _, err := c.Recv(x.s, x.peer, 1<<20, x.recv); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Send(x.s, x.peer, 1<<20, x.sd); err != nil {
				t.Fatal(err)
			}
		}
	})
	var wd *engine.WatchdogError
	if !errors.As(err, &wd) {
		t.Fatalf("run ended with %v; want the watchdog", err)
	}
	if len(fs) != 1 || fs[0].Kind != diagnosis.Deadlock || !strings.HasPrefix(fs[0].Evidence, "each waits on the next: rank 3 in recv of 1 MiB from 5 (op 1, ") ||
		!strings.Contains(fs[0].Evidence, "rank 5 in recv of 1 MiB from 3 (op 2, ") {
		for _, f := range fs {
			t.Logf("%s", f.String())
		}
		t.Fatalf("%d findings; want one deadlock naming ranks 3 → 5 → 3 in their receives", len(fs))
	}
}
