package sim_test

import (
	"math"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/engine/topology"
	"github.com/xfertop/xfertop/timeline"
)

// PredictP2P times a send alone as the simulator runs it: a lone send between every kind of pair
// (NVLink or PCIe within a host, an NVLink mesh, the NICs across hosts, a rail fabric
// across rail groups and rails) takes, in the simulator, the predicted latency plus its bytes at
// the predicted rate.
func TestPredictP2PMatchesALoneSend(t *testing.T) {
	topo := func(src string) engine.Topology {
		tp, err := topology.Parse("t.yaml", []byte("name: t\n"+src))
		if err != nil {
			t.Fatal(err)
		}
		return tp
	}
	h100x8x2 := topo("base: h100x8x2\n")
	rail := topo("base: h100x8x2\nhosts: 4\nfabric:\n  kind: rail\n  hosts_per_leaf: 2\n  switch_radix: 64\n  hop_latency: 1us\n")
	mesh := topo("base: h100x8x2\ninterconnect: nvlink-mesh\nnvls: false\n")
	pcie := topo("base: l40sx8\n")
	slowNIC := topo("base: h100x8x2\nnics.bandwidth: 100Gb/s\n")
	for _, tc := range []struct {
		name     string
		tp       engine.Topology
		src, dst engine.DeviceID
		bytes    int64
	}{
		{"NVLink", h100x8x2, 0, 5, 64 << 20},
		{"NVLink, small", h100x8x2, 0, 5, 4 << 10},
		{"NVLink mesh", mesh, 0, 5, 64 << 20},
		{"PCIe", pcie, 0, 5, 64 << 20},
		{"NICs", h100x8x2, 2, 10, 64 << 20},
		{"NICs 4× slower", slowNIC, 2, 10, 64 << 20},
		{"rail, across groups, other rail", rail, 0, 17, 64 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, store := newClientOf(t, tc.tp, engine.DefaultOptions())
			warm(t, c, []engine.DeviceID{tc.src, tc.dst})
			id := c.NewOpID()
			if _, err := c.Send(c.TransferStream(tc.src), tc.dst, tc.bytes, id); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Recv(c.TransferStream(tc.dst), tc.src, tc.bytes, id); err != nil {
				t.Fatal(err)
			}
			run(t, c)
			got := float64(lastOf(store.Events(), timeline.KindSend).Dur())
			p := sim.PredictP2P(sim.ModelOf(tc.tp), tc.tp, tc.src, tc.dst)
			if want := p.TimeNs(tc.bytes); math.Abs(got-want) > 2 {
				t.Errorf("send %d→%d of %d bytes took %.0f ns in the simulator; PredictP2P says %.0f (%d ns + %.4g GB/s)", tc.src, tc.dst, tc.bytes, got, want, p.LatencyNs, p.Bps/1e9)
			}
		})
	}
}
