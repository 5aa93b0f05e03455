package analysis

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// untimed marks e as an op whose time its source does not know, as the Flight Recorder importer
// does: End at Start, a placeholder.
func untimed(e timeline.Event) timeline.Event {
	e.End = e.Start
	e.Aux |= timeline.AuxTimeUnknown
	return e
}

// timedJob is two steps of two ranks on a stream each: kernels, a send and its receive (a group launch's), two
// all-reduces.
func timedJob() []timeline.Event {
	on := func(e timeline.Event, stream uint32) timeline.Event {
		e.Stream = stream
		if e.Kind != timeline.KindCollective {
			e.Group = uint32(e.Op)
		}
		return e
	}
	return []timeline.Event{
		stepEv(0, 3200), stepEv(3200, 6500),
		kern(0, 1, 0, 1000), kern(1, 2, 0, 1200),
		on(sendEv(0, 1, 1100, 1600, 1<<20, 1), 1), on(recvEv(1, 0, 1100, 1700, 1<<20, 1), 2),
		on(collEv(timeline.CollAllReduce, 2, 0, 10, 2000, 3000, 4<<20), 1), on(collEv(timeline.CollAllReduce, 2, 1, 10, 2200, 3100, 4<<20), 2),
		kern(0, 1, 3500, 4500), kern(1, 2, 3400, 4400),
		on(collEv(timeline.CollAllReduce, 2, 0, 11, 5000, 6000, 4<<20), 1), on(collEv(timeline.CollAllReduce, 2, 1, 11, 5100, 6200, 4<<20), 2),
	}
}

// untimedOps are ops of the same kinds as timedJob's, of unknown time, between its ops: a send and
// its receive and an all-reduce (both ranks' parts), created at times the ranks were idle or busy.
func untimedOps() []timeline.Event {
	on := func(e timeline.Event, stream uint32) timeline.Event {
		e.Stream = stream
		if e.Kind != timeline.KindCollective {
			e.Group = uint32(e.Op)
		}
		return untimed(e)
	}
	return []timeline.Event{
		on(sendEv(0, 1, 1800, 0, 1<<20, 2), 1), on(recvEv(1, 0, 1750, 0, 1<<20, 2), 2),
		on(collEv(timeline.CollAllReduce, 2, 0, 12, 4000, 0, 4<<20), 1), on(collEv(timeline.CollAllReduce, 2, 1, 12, 3000, 0, 4<<20), 2),
	}
}

// withUntimed is timedJob with untimedOps, in start order.
func withUntimed() []timeline.Event {
	evs := append(timedJob(), untimedOps()...)
	slices.SortStableFunc(evs, func(a, b timeline.Event) int { return int(a.Start - b.Start) })
	return evs
}

// An op of unknown time (timeline.AuxTimeUnknown) is counted, with its bytes, and changes no time
// figure: busy time, GB/s and the percentiles of the transfers, the collectives' time,
// percentiles and bandwidths, their stragglers, the send/recv iterations, the gaps on streams and
// the devices' breakdown (with the idle time inside steps), the steps and the diagnosis's
// findings. Each figure of the run with such ops added is the run's without them.
func TestUnknownTimeChangesNoFigure(t *testing.T) {
	m := timeline.Meta{Backend: "sim"}
	base, got := analyze(m, timedJob()...), analyze(m, withUntimed()...)
	if base.Steps.Count != 2 || base.Breakdown.InSteps == nil || base.StreamIdle.TotalNs == 0 || len(base.SendRecv) != 1 {
		t.Fatalf("the run without ops of unknown time: %d steps, idle in steps %v, gaps %d ns, %d send/recv rows; want 2, some, some, 1",
			base.Steps.Count, base.Breakdown.InSteps, base.StreamIdle.TotalNs, len(base.SendRecv))
	}
	same := func(what string, a, b any) {
		t.Helper()
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Errorf("%s with ops of unknown time = %s; want %s (as without them)", what, jb, ja)
		}
	}
	for _, k := range []string{"send", "recv"} {
		b, g := base.Transfers.ByKind[k], got.Transfers.ByKind[k]
		if g.Count != b.Count+1 || g.Bytes != b.Bytes+1<<20 || g.UnknownTime != 1 {
			t.Errorf("%s: count %d, bytes %d, unknown_time %d; want %d, %d, 1", k, g.Count, g.Bytes, g.UnknownTime, b.Count+1, b.Bytes+1<<20)
		}
		same(k+" busy_ns", b.BusyNs, g.BusyNs)
		same(k+" gbps", b.GBps, g.GBps)
		same(k+" time_ns_p50", b.P50Ns, g.P50Ns)
		same(k+" time_ns_p99", b.P99Ns, g.P99Ns)
	}
	if len(got.Collectives.Rows) != 1 || len(base.Collectives.Rows) != 1 {
		t.Fatalf("collective rows %+v / %+v; want one each", base.Collectives.Rows, got.Collectives.Rows)
	}
	b, g := base.Collectives.Rows[0], got.Collectives.Rows[0]
	if g.Count != b.Count+1 || g.UnknownTime != 1 || g.Bytes != b.Bytes {
		t.Errorf("all_reduce: count %d, unknown_time %d, bytes %d; want %d, 1, %d", g.Count, g.UnknownTime, g.Bytes, b.Count+1, b.Bytes)
	}
	same("all_reduce time_ns_total", b.TimeNs, g.TimeNs)
	same("all_reduce time_ns_p50", b.P50Ns, g.P50Ns)
	same("all_reduce time_ns_p99", b.P99Ns, g.P99Ns)
	same("all_reduce algbw", b.AlgBW, g.AlgBW)
	same("all_reduce busbw", b.BusBW, g.BusBW)
	same("stragglers", base.Collectives.Stragglers, got.Collectives.Stragglers)
	same("send/recv iterations", base.SendRecv, got.SendRecv)
	same("steps", base.Steps, got.Steps)
	same("stream gaps", base.StreamIdle, got.StreamIdle)
	same("breakdown", base.Breakdown, got.Breakdown)
	same("findings", base.Findings, got.Findings)
}

// A collective instance one of whose ranks' parts is of unknown time is of unknown time: its end
// is unknown, so the other rank's part says nothing of how long it took.
func TestUnknownTimeCollectiveInstance(t *testing.T) {
	evs := []timeline.Event{
		collEv(timeline.CollAllReduce, 2, 0, 1, 0, 1000, 1<<20), collEv(timeline.CollAllReduce, 2, 1, 1, 100, 1100, 1<<20),
		untimed(collEv(timeline.CollAllReduce, 2, 0, 2, 2000, 0, 1<<20)), collEv(timeline.CollAllReduce, 2, 1, 2, 2000, 2100, 1<<20),
	}
	r := analyze(timeline.Meta{}, evs...)
	if len(r.Collectives.Rows) != 1 {
		t.Fatalf("rows %+v; want one", r.Collectives.Rows)
	}
	row := r.Collectives.Rows[0]
	if row.Count != 2 || row.UnknownTime != 1 || row.TimeNs != 1100 || row.P50Ns == nil || *row.P50Ns != 1100 {
		t.Errorf("row %+v; want count 2, unknown_time 1, time 1100 ns (p50 too): the first instance's alone", row)
	}
	eqPtrF(t, "algbw", row.AlgBW, rate(1<<20, 1100))
}

// Where no op of a row has a known time, its time figures are unknown: null in JSON, never 0.
func TestUnknownTimeIsNull(t *testing.T) {
	r := analyze(timeline.Meta{}, untimedOps()...)
	send, _ := json.Marshal(r.Transfers.ByKind["send"])
	want := `{"count":1,"bytes":1048576,"unknown_size":0,"unknown_time":1,"busy_ns":null,"gbps":null,"time_ns_p50":null,"time_ns_p99":null,`
	if len(send) < len(want) || string(send[:len(want)]) != want {
		t.Errorf("send = %s; want it to begin %s", send, want)
	}
	if len(r.Collectives.Rows) != 1 {
		t.Fatalf("rows %+v; want one", r.Collectives.Rows)
	}
	coll, _ := json.Marshal(r.Collectives.Rows[0])
	var c map[string]any
	if err := json.Unmarshal(coll, &c); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"time_ns_total", "time_ns_p50", "time_ns_p99", "algbw_gbps", "busbw_gbps"} {
		if v, ok := c[k]; !ok || v != nil {
			t.Errorf("collective %s = %v; want null", k, v)
		}
	}
	if c["unknown_time"] != 1.0 || c["count"] != 1.0 {
		t.Errorf("collective count %v, unknown_time %v; want 1, 1", c["count"], c["unknown_time"])
	}
	// Read back, a null is unknown again: UnknownTime == Count.
	var back Stats
	if err := json.Unmarshal(send, &back); err != nil || back.TimeKnown() {
		t.Errorf("read back %+v (%v): time known; want unknown", back, err)
	}
	if len(r.StreamIdle.Streams) != 0 || r.StreamIdle.TotalNs != 0 {
		t.Errorf("stream gaps %+v; want no stream measured", r.StreamIdle)
	}
}
