package analysis

import (
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// emulated marks events as standing in for the topology's (the cuda backend's --fit on shared GPUs).
func emulated(evs ...timeline.Event) []timeline.Event { return withAux(evs, timeline.AuxEmulated) }

// An all-reduce of 8 ranks that --fit put on one GPU moved nothing: its row keeps the scenario's op
// and ranks (comparable with the simulator's row), says it was emulated, and gives no bandwidth,
// where 1 GiB "all-reduced" in 6.8 µs had read 158,729 GB/s. It is a row apart from real instances
// of the same shape, whose figures stay.
func TestEmulatedCollectives(t *testing.T) {
	const gib = 1 << 30
	starts, ends := make([]int64, 8), []int64{6800, 6800, 6800, 6800, 6800, 6800, 6800, 6800}
	evs := emulated(instance(timeline.CollAllReduce, 1, starts, ends, gib)...)
	evs = append(evs, emulated(instance(timeline.CollAllReduce, 2, starts, ends, gib)...)...)
	real := instance(timeline.CollAllReduce, 3, starts, []int64{4e6, 4e6, 4e6, 4e6, 4e6, 4e6, 4e6, 4e6}, gib)
	evs = append(evs, real...)
	rows := analyze(timeline.Meta{Devices: 8, GPUsPerHost: 8}, evs...).Collectives.Rows
	if len(rows) != 2 {
		t.Fatalf("rows = %+v; want one real, one emulated", rows)
	}
	tests := []struct {
		name     string
		row      Collective
		emulated bool
		count    int64
		rated    bool
	}{
		{"real", rows[0], false, 1, true},
		{"emulated", rows[1], true, 2, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.row
			if r.Op != "all_reduce" || r.Ranks != 8 || r.Bytes != gib || r.Count != tc.count || r.Emulated != tc.emulated {
				t.Errorf("row = %s %d ranks %d B x%d emulated %v; want all_reduce 8 ranks %d B x%d emulated %v",
					r.Op, r.Ranks, r.Bytes, r.Count, r.Emulated, gib, tc.count, tc.emulated)
			}
			if (r.AlgBW != nil) != tc.rated || (r.BusBW != nil) != tc.rated {
				t.Errorf("algbw %v busbw %v; want figures: %v", orNil(r.AlgBW), orNil(r.BusBW), tc.rated)
			}
			if r.TimeNs <= 0 {
				t.Errorf("time %d; want what ran, measured", r.TimeNs)
			}
		})
	}
}

// Sends carried by copies on a shared GPU and receives that waited for them: counted, with their
// bytes and times, but no rate of the topology's links (GB/s); the sends' copies have their own
// rate, the receives none (their time is a wait from whenever their stream got there). A real
// transfer beside them keeps its rate alone.
func TestEmulatedTransfers(t *testing.T) {
	const mib = 1 << 20
	evs := emulated(
		sendEv(0, 8, 0, 50*us, 64*mib, 1), recvEv(8, 0, 0, 20_000*us, 64*mib, 1),
		sendEv(1, 9, 0, 50*us, 64*mib, 2), recvEv(9, 1, 0, 30*us, 64*mib, 2),
	)
	evs = append(evs, sendEv(2, 10, 0, 1342*us, 64*mib, 3), recvEv(10, 2, 0, 1342*us, 64*mib, 3))
	tr := analyze(timeline.Meta{Devices: 16, GPUsPerHost: 8}, evs...).Transfers
	tests := []struct {
		kind          string
		count, emu    int64
		gbps, emuGBps *float64
	}{
		{"send", 3, 2, f64(50.01), f64(1342.18)},
		{"recv", 3, 2, f64(50.01), nil},
	}
	for _, tc := range tests {
		t.Run(tc.kind, func(t *testing.T) {
			s := tr.ByKind[tc.kind]
			if s.Count != tc.count || s.Emulated != tc.emu || s.Bytes != tc.count*64*mib {
				t.Errorf("count %d emulated %d bytes %d; want %d, %d, %d", s.Count, s.Emulated, s.Bytes, tc.count, tc.emu, tc.count*64*mib)
			}
			if !sameRate(s.GBps, tc.gbps) || !sameRate(s.EmulatedGBps, tc.emuGBps) {
				t.Errorf("gbps %v emulated_gbps %v; want %v, %v", orNil(s.GBps), orNil(s.EmulatedGBps), orNil(tc.gbps), orNil(tc.emuGBps))
			}
		})
	}
	if tr.Count != 3 || tr.Bytes != 3*64*mib {
		t.Errorf("transfers %d, %d B; want 3, %d (each send once)", tr.Count, tr.Bytes, 3*64*mib)
	}
}

func sameRate(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
