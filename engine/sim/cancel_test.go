package sim_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/timeline"
)

// lookCounter is a context that is never done and counts how often the run loop looked.
type lookCounter struct {
	context.Context
	looks atomic.Int64
}

func (c *lookCounter) Err() error { c.looks.Add(1); return nil }

// The run loop looks for a cancel (q, ctrl+c) after a bounded amount of its own work, the flows
// the bandwidth solver visits included, not only after so many items: an all-to-all of 1,024
// ranks is a million flows, each completion a re-solve of them all, and looking once per 1,024
// items left q and ctrl+c unanswered for minutes. Here an all-to-all of 32 ranks (992 flows) on
// one node of 32 GPUs, where NCCL runs every peer at once (an all-to-all across nodes runs a batch
// of peers at a time, its solves small): the loop must look about once per solve of them, not
// once per thousand items.
func TestRunLooksForCancelByWork(t *testing.T) {
	tp, err := sim.TopologyByName("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	tp.GPUsPerHost = 32
	sink := &countSink{}
	s, err := sim.New(sim.Config{Topology: tp, Seed: 1}, sink, timeline.NewStrings())
	if err != nil {
		t.Fatal(err)
	}
	c := engine.NewClient(s, sink, engine.DefaultOptions())
	n := tp.Devices()
	devs := make([]engine.DeviceID, n)
	sizes := make([][]int64, n)
	for i := range devs {
		devs[i] = engine.DeviceID(i)
		sizes[i] = make([]int64, n)
		for j := range sizes[i] {
			sizes[i][j] = int64(1+(i*7+j*13)%17) << 16 // ragged: completions spread over time
		}
	}
	if _, err := c.RaggedAllToAll(devs, sizes, "a2a"); err != nil {
		t.Fatal(err)
	}
	ctx := &lookCounter{Context: context.Background()}
	if err := s.Run(ctx); err != nil && !errors.Is(err, engine.ErrCanceled) {
		t.Fatal(err)
	}
	solves, looks := sim.Solves(s), ctx.looks.Load()
	if solves < 100 {
		t.Fatalf("%d solves: the all-to-all is too small to show anything", solves)
	}
	if looks < int64(solves)/2 {
		t.Errorf("the run loop looked for a cancel %d times over %d solves of %d flows; want about once a solve", looks, solves, n*(n-1))
	}
}
