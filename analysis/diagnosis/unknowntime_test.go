package diagnosis

import (
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// A collective part of unknown time (timeline.AuxTimeUnknown: a Flight Recorder entry not retired,
// without duration_ms, imported with End at Start) is no time to compare with its peers': eight
// ranks whose all-reduces all take 10 ms are healthy, even when seven of them also hold parts of
// unknown time (without the rule, those read as 0 ms and made rank 7 a slow link at 2×).
func TestUnknownTimeNoComparison(t *testing.T) {
	s := newStepper(8)
	var op uint64
	for range 3 {
		for i := range 4 {
			op++
			at := s.t + int64(i)*20*ms
			for r := int32(0); r < 8; r++ {
				s.add(timeline.Event{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Start: at, End: at + 10*ms, Queued: at,
					Device: r, Peer: -1, Ranks: 8, Bytes: 1 << 26, Op: op, Comm: 1, Stream: 1})
			}
			op++
			for r := int32(0); r < 7; r++ {
				s.add(timeline.Event{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Start: at + 15*ms, End: at + 15*ms, Queued: at + 15*ms,
					Device: r, Peer: -1, Ranks: 8, Bytes: 1 << 26, Op: op, Comm: 1, Stream: 1, Aux: timeline.AuxTimeUnknown})
			}
		}
		s.endStep(100 * ms)
	}
	if got := s.d.Result(s.strs); len(got) != 0 {
		t.Errorf("findings %+v; want none", got)
	}
}
