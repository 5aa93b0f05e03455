package diagnosis

import (
	"github.com/xfertop/xfertop/analysis/hostmap"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// Labels and communicators whose ids share an entry of their caches (ids cacheSize apart) keep
// their own slots and communicators, in whatever order their events come.
func TestCachesKeepAliasedIDsApart(t *testing.T) {
	tests := []struct {
		name   string
		labels []uint32 // kernel labels, in the order their kernels end (each 10 ns × its place + 1)
	}{
		{"alternating", []uint32{1, 1 + cacheSize, 1, 1 + cacheSize, 1}},
		{"three sharing an entry", []uint32{5, 5 + cacheSize, 5 + 2*cacheSize, 5 + cacheSize, 5}},
		{"one", []uint32{7, 7, 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New(hostmap.ByID(8))
			want := map[uint32]float64{}
			for i, l := range tt.labels {
				dur := int64(10 * (i + 1))
				d.Add(&timeline.Event{Kind: timeline.KindKernel, Device: 0, Peer: timeline.NoDevice, Label: l, Start: 0, End: dur, Queued: -1})
				want[l] += float64(dur)
			}
			for l, sum := range want {
				slot, ok := d.labels[l]
				if !ok {
					t.Fatalf("label %d has no slot", l)
				}
				if got := d.kSum[slot][0]; got != sum {
					t.Errorf("label %d: %v ns summed; want %v", l, got, sum)
				}
			}
		})
	}
	// Communicator 3 is on one host, 3 + cacheSize across two: a collective on each crosses
	// hosts or not as its own communicator does, whichever was looked up last.
	d := New(hostmap.ByID(8))
	for _, j := range []struct {
		comm uint32
		dev  int32
	}{{3, 0}, {3, 1}, {3 + cacheSize, 0}, {3 + cacheSize, 8}} {
		d.Add(&timeline.Event{Kind: timeline.KindCommInit, Device: j.dev, Peer: timeline.NoDevice, Comm: j.comm, Ranks: 2})
	}
	for _, c := range []uint32{3, 3 + cacheSize, 3 + cacheSize, 3, 3} {
		e := &timeline.Event{Kind: timeline.KindCollective, Device: 0, Peer: timeline.NoDevice, Comm: c, Ranks: 2}
		if got, want := d.crosses(e), c != 3; got != want {
			t.Errorf("a collective on communicator %d crosses hosts: %v; want %v", c, got, want)
		}
	}
	if d.comm(99) != nil {
		t.Error("communicator 99, never seen, is known")
	}
}
