package whatif

import (
	"strings"
	"testing"

	"github.com/xfertop/xfertop/depgraph"
	"github.com/xfertop/xfertop/engine/topology"
	"github.com/xfertop/xfertop/timeline"
)

// A collective kept at its measured time is kept for what the trace lacks first, with or without
// a topology: a topology would not help a collective of unknown size or a send/receive kernel.
func TestReplayKeptReasonFirst(t *testing.T) {
	topo, err := topology.Builtin("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		op   timeline.CollOp
		size int64
		want string
	}{
		{"no size", timeline.CollAllReduce, 0, "does not record their size"},
		{"send/receive kernel", timeline.CollSendRecv, 0, "send/receive kernels"},
	} {
		for _, o := range []Options{{}, {Topology: topo}} {
			s := timeline.NewStrings()
			evs := []timeline.Event{allReduce(0, 0, 100, c.size), allReduce(1, 0, 100, c.size)}
			for i := range evs {
				evs[i].Sub = uint8(c.op)
			}
			g, err := depgraph.Build(evs, s)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Replay(g, s, o)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(r.KeptReasons(), "; "); !strings.Contains(got, c.want) {
				t.Errorf("%s, topology %q: kept %q; want %q", c.name, o.Topology.Name, got, c.want)
			}
		}
	}
}

// --comm algo=nvls,proto=ll128 is not taken because NVLS runs Simple only, and the note says so,
// not that NVLS is missing from the model on the topology.
func TestReplayForcedPairNotInNCCL(t *testing.T) {
	topo, err := topology.Builtin("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	s := timeline.NewStrings()
	g, err := depgraph.Build([]timeline.Event{allReduce(0, 0, 100, 64<<20), allReduce(1, 0, 100, 64<<20)}, s)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Replay(g, s, Options{Topology: topo, TraceDevices: 2, Algo: timeline.AlgoNVLS, Proto: timeline.ProtoLL128})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(r.NotForcedReasons(), "; ")
	if !strings.Contains(got, "algo=nvls,proto=ll128: NVLS has no LL128 protocol in NCCL") {
		t.Errorf("not forced: %q; want NVLS's protocol named as the reason", got)
	}
}
