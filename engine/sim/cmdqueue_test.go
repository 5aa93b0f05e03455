package sim

import (
	"testing"

	"github.com/xfertop/xfertop/engine"
)

// A host's command queue is first in, first out across its blocks, whatever the pattern of pushes
// and pops; the blocks it has read go back to the pool cleared, and a queue that drains and fills
// again takes them from there rather than allocating.
func TestCmdQueue(t *testing.T) {
	for _, tt := range []struct {
		name       string
		push, pop  int // per round
		rounds     int
		wantBlocks int // blocks ever made
	}{
		{"one at a time", 1, 1, 1000, 1},
		{"a block and a half, drained", cmdBlock * 3 / 2, cmdBlock * 3 / 2, 50, 2},
		{"growing backlog", 5, 3, 200, 400/cmdBlock + 2},
		{"ten blocks queued, then drained", 10 * cmdBlock, 10 * cmdBlock, 3, 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &Sim{}
			var q cmdQueue
			made := 0
			next, want := int64(0), int64(0)
			for range tt.rounds {
				for range tt.push {
					free := len(s.freeCmds)
					c := s.cmdOf(&engine.Command{Kind: engine.CmdSleep, Duration: next, Devices: []engine.DeviceID{1}, Label: 3})
					*s.pushCmd(&q) = c
					if free == 0 && len(s.freeCmds) == 0 && q.tail == 1 {
						made++
					}
					next++
				}
				for range tt.pop {
					if q.empty() {
						break
					}
					if got := q.front().Duration; got != want {
						t.Fatalf("popped command %d; want %d", got, want)
					}
					s.popCmd(&q)
					want++
				}
			}
			for !q.empty() {
				if got := q.front().Duration; got != want {
					t.Fatalf("draining: command %d; want %d", got, want)
				}
				s.popCmd(&q)
				want++
			}
			if want != next {
				t.Fatalf("%d commands out of %d pushed", want, next)
			}
			if made != tt.wantBlocks || len(s.freeCmds) != made {
				t.Errorf("%d blocks made, %d in the pool after draining; want %d made, all in the pool", made, len(s.freeCmds), tt.wantBlocks)
			}
			for _, b := range s.freeCmds {
				for i := range b {
					if b[i] != (hostCmd{}) {
						t.Fatalf("a pooled block holds a command: %+v", b[i])
					}
				}
			}
		})
	}
}
