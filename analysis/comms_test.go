package analysis

import (
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// A communicator's creation is reported when it ends, after the lookups that found it under way:
// those hits count once the miss that created it is in, so the cache never reads 100% hits while
// its communicators are being made. From a later start (a replay sought past the creation), a hit
// counts at once.
func TestCommHitsBeforeTheirCreation(t *testing.T) {
	nd := timeline.NoDevice
	hit := timeline.Event{Kind: timeline.KindCommHit, Comm: 7, Device: 0, Peer: nd, Start: 10, End: 10}
	init := timeline.Event{Kind: timeline.KindCommInit, Comm: 7, Device: 0, Peer: nd, Start: 0, End: 920}
	tests := []struct {
		name         string
		from         int64
		evs          []timeline.Event
		hits, misses int64
		listed       int
	}{
		{"hits while it is being created", 0, []timeline.Event{hit, hit}, 0, 0, 0},
		{"then its creation ends", 0, []timeline.Event{hit, hit, init}, 2, 1, 1},
		{"creation reported first (older recordings)", 0, []timeline.Event{init, hit, hit}, 2, 1, 1},
		{"from after the creation", 5, []timeline.Event{hit, hit}, 2, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := New(timeline.Meta{Backend: "sim", Devices: 1})
			a.StartAt(tt.from)
			for i := range tt.evs {
				a.Emit(&tt.evs[i])
			}
			cc := a.Result(nil).CommCache
			if cc.Hits != tt.hits || cc.Misses != tt.misses || len(cc.Comms) != tt.listed {
				t.Errorf("hits %d, misses %d, %d listed; want %d, %d, %d", cc.Hits, cc.Misses, len(cc.Comms), tt.hits, tt.misses, tt.listed)
			}
		})
	}
}
