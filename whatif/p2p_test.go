package whatif

import (
	"testing"

	"github.com/xfertop/xfertop/depgraph"
	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/engine/topology"
	"github.com/xfertop/xfertop/timeline"
)

// A send and its receive are re-timed only where the change touches the path between their
// GPUs: on the recorded machine, or with NVLink doubled for a send across hosts, they keep their
// measured time (which the model of a lone send would not give: this one shared its NIC, 2 ms
// where alone it takes about 1.4); with the NICs 4× slower their transfer takes 4× as long, plus
// the path's latency; on an imported trace (no recorded machine) the model times it alone.
func TestReplayRetimesSendsOnTheirPath(t *testing.T) {
	parse := func(src string) engine.Topology {
		tp, err := topology.Parse("t.yaml", []byte("name: t\nbase: h100x8x2\n"+src))
		if err != nil {
			t.Fatal(err)
		}
		return tp
	}
	rec, slowNIC, fastNVL := parse(""), parse("nics.bandwidth: 100Gb/s\n"), parse("gpu.nvlink: 900GB/s\n")
	const bytes = 64 << 20
	const measured = 2000 * us
	send := timeline.Event{Kind: timeline.KindSend, Device: 2, Peer: 10, Stream: 1, Start: 100 * us, End: 100*us + measured, Op: 9, Bytes: bytes}
	recv := timeline.Event{Kind: timeline.KindRecv, Device: 10, Peer: 2, Stream: 2, Start: 100 * us, End: 100*us + measured, Op: 9, Bytes: bytes}
	s := timeline.NewStrings()
	g, err := depgraph.Build([]timeline.Event{send, recv}, s)
	if err != nil {
		t.Fatal(err)
	}
	old := sim.PredictP2P(sim.ModelOf(rec), rec, 2, 10)
	slow := sim.PredictP2P(sim.ModelOf(slowNIC), slowNIC, 2, 10)
	for _, tc := range []struct {
		name     string
		o        Options
		want     int64 // the send's replayed duration
		retimed  int
		keptWhy  string
		keptSeen int
	}{
		{"unchanged", Options{Topology: rec, Recorded: rec}, measured, 0, p2pUntouched, 1},
		{"NVLink ×2, a send across hosts", Options{Topology: fastNVL, Recorded: rec}, measured, 0, p2pUntouched, 1},
		{"NICs 4× slower", Options{Topology: slowNIC, Recorded: rec}, slow.LatencyNs + int64(float64(measured-old.LatencyNs)*old.Bps/slow.Bps), 1, "", 0},
		{"imported: the model alone", Options{Topology: slowNIC}, int64(slow.TimeNs(bytes)), 1, "", 0},
		{"no topology", Options{}, measured, 0, p2pNoTopology, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Replay(g, s, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range r.Events {
				if got := e.End - e.Start; got != tc.want {
					t.Errorf("%v replayed for %d ns; want %d", e.Kind, got, tc.want)
				}
			}
			if r.RetimedP2P != tc.retimed || tc.keptWhy != "" && r.Kept[tc.keptWhy] != tc.keptSeen {
				t.Errorf("re-timed %d, kept %v; want %d re-timed, %d kept (%s)", r.RetimedP2P, r.Kept, tc.retimed, tc.keptSeen, tc.keptWhy)
			}
		})
	}
	if slow.Bps*3.9 > old.Bps || slow.Bps*4.1 < old.Bps {
		t.Errorf("a 4× slower NIC: %.4g GB/s, against %.4g", slow.Bps/1e9, old.Bps/1e9)
	}
}
