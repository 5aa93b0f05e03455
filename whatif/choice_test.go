package whatif

import (
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/topology"
	"github.com/xfertop/xfertop/timeline"
)

// The model is asked for what --comm forces, else what the run forced, else (on the trace's own
// topology only) what each collective was recorded with, else the tuner's choice.
func TestNCCLAsk(t *testing.T) {
	h100, err := topology.Builtin("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	l40s, err := topology.Builtin("l40sx8")
	if err != nil {
		t.Fatal(err)
	}
	e := timeline.Event{Kind: timeline.KindCollective, Aux: timeline.PackNCCL(timeline.AlgoRing, timeline.ProtoLL128, 16)}
	const (
		ring, tree, nvls = timeline.AlgoRing, timeline.AlgoTree, timeline.AlgoNVLS
		ll, ll128        = timeline.ProtoLL, timeline.ProtoLL128
	)
	for _, c := range []struct {
		name      string
		o         Options
		wantAlgo  timeline.NCCLAlgo
		wantProto timeline.NCCLProto
	}{
		{"own topology: as recorded", Options{Topology: h100, Recorded: h100}, ring, ll128},
		{"own topology, run forced ring: as recorded", Options{Topology: h100, Recorded: h100, RunAlgo: ring}, ring, ll128},
		{"--comm algo=nvls wins", Options{Topology: h100, Recorded: h100, Algo: nvls}, nvls, 0},
		{"--comm proto=ll over the run's ring", Options{Topology: h100, Recorded: h100, RunAlgo: ring, Proto: ll}, ring, ll},
		{"another topology: the tuner", Options{Topology: l40s, Recorded: h100}, 0, 0},
		{"another topology: the run's forcing holds", Options{Topology: l40s, Recorded: h100, RunAlgo: tree}, tree, 0},
		{"no recorded topology: the tuner", Options{Topology: h100}, 0, 0},
		{"scaled out: the tuner", Options{Topology: scaled(t, h100, 2), Recorded: h100}, 0, 0},
	} {
		a, p := c.o.ncclAsk(&e)
		if a != c.wantAlgo || p != c.wantProto {
			t.Errorf("%s: asks %v_%v; want %v_%v", c.name, a, p, c.wantAlgo, c.wantProto)
		}
	}
}

func scaled(t *testing.T, tp engine.Topology, hosts int) engine.Topology {
	t.Helper()
	s, err := topology.WithHosts(tp, hosts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
