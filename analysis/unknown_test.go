package analysis

import (
	"encoding/json"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// What a source does not record is unknown, written null, never 0: the communicator cache and
// groups of a trace, and the group and message size of a collective kernel without them.
func TestUnknownIsNull(t *testing.T) {
	nccl := func(ranks int, bytes int64) timeline.Event {
		e := collEv(timeline.CollAllReduce, ranks, 0, 0, 100, 200, bytes)
		return e
	}
	tests := []struct {
		name        string
		backend     string
		evs         []timeline.Event
		cache, coll string
	}{
		{"a trace: nothing recorded", "kineto", []timeline.Event{nccl(0, 0)},
			`{"hits":null,"misses":null,"evictions":null,"init_ns_total":null}|{"launches":null,"ops":null}`,
			`"ranks":null,"size_class":null,"bytes":null`},
		{"a trace that has them", "chrome", []timeline.Event{nccl(2, 4096), nccl(2, 4096), commInitEv(1, 0, 0, 50)},
			`{"hits":0,"misses":1,"evictions":0,"init_ns_total":50}|{"launches":0,"ops":0}`,
			`"ranks":2,"size_class":4096,"bytes":4096`},
		{"the simulator, no communicator used: known zeros", "sim", []timeline.Event{kern(0, 1, 0, 10)},
			`{"hits":0,"misses":0,"evictions":0,"init_ns_total":0}|{"launches":0,"ops":0}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := analyze(timeline.Meta{Backend: tc.backend}, tc.evs...)
			cc, _ := json.Marshal(r.CommCache)
			gr, _ := json.Marshal(r.Groups)
			if got := string(cc) + "|" + string(gr); got != tc.cache {
				t.Errorf("comm_cache|groups = %s; want %s", got, tc.cache)
			}
			if tc.coll == "" {
				return
			}
			if len(r.Collectives.Rows) != 1 {
				t.Fatalf("collectives %+v; want one row", r.Collectives.Rows)
			}
			row, _ := json.Marshal(r.Collectives.Rows[0])
			if want := `{"op":"all_reduce",` + tc.coll + `,`; len(row) < len(want) || string(row[:len(want)]) != want {
				t.Errorf("collective = %s; want it to begin %s", row, want)
			}
			// Null reads back as unknown (0), and the rest of the row is kept.
			var back Collective
			if err := json.Unmarshal(row, &back); err != nil || back.Ranks != r.Collectives.Rows[0].Ranks || back.Count != r.Collectives.Rows[0].Count {
				t.Errorf("read back %+v (%v); want %+v", back, err, r.Collectives.Rows[0])
			}
		})
	}
}
