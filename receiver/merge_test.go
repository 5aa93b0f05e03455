package receiver

import (
	"strings"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/xfertop/xfertop/timeline"
)

func mergeAll(t *testing.T, m *Merger, now time.Time, reqs ...[]byte) {
	t.Helper()
	var d Decoded
	for _, b := range reqs {
		if err := Decode(b, &d, 0); err != nil {
			t.Fatal(err)
		}
		m.Merge(&d, now)
	}
}

func seqs(evs []timeline.Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Start / 1000
	}
	return out
}

// Numbered events come out in the order they were produced whatever order they arrive in; a
// retried request's events come once; times are ns since the sender's epoch.
func TestMergeOrdersAndDedups(t *testing.T) {
	var sink collect
	var meta timeline.Meta
	m := NewMerger(timeline.NewStrings(), time.Second, func(x timeline.Meta) timeline.Sink { meta = x; return &sink })
	now := time.Now()
	late, early := kernels("s1", 5, 5), kernels("s1", 0, 5)
	mergeAll(t, m, now, marshal(t, late), marshal(t, early), marshal(t, early))
	got := seqs(sink.evs)
	if len(got) != 10 {
		t.Fatalf("released %v; want 0..9", got)
	}
	for i, s := range got {
		if s != int64(i) {
			t.Fatalf("released %v; want 0..9 in order", got)
		}
	}
	st := m.Stats()
	if st.Duplicates != 5 || st.Lost != 0 || st.Held != 0 || len(st.Hosts) != 1 || st.Hosts[0].Spans != 15 {
		t.Errorf("stats %+v; want 5 duplicates, nothing lost or held, one host with 15 spans", st)
	}
	if meta.GPUsPerHost != 8 || meta.Scenario != "test" || meta.EpochUnixNs != epoch {
		t.Errorf("meta %+v; want the sender's", meta)
	}
	if e := sink.evs[3]; e.Kind != timeline.KindKernel || e.Device != 0 || e.Stream != 1 || e.End-e.Start != 1000 || e.Peer != timeline.NoDevice {
		t.Errorf("event %+v", e)
	}
}

// A gap holds the events after it back for the reorder wait, then is counted lost; Flush gives up
// what is still held.
func TestMergeGap(t *testing.T) {
	var sink collect
	m := NewMerger(timeline.NewStrings(), time.Second, func(timeline.Meta) timeline.Sink { return &sink })
	now := time.Now()
	mergeAll(t, m, now, marshal(t, request("s", 0, kernelSpan(0, 0, 0, 10), kernelSpan(1, 0, 1000, 1010), kernelSpan(3, 0, 3000, 3010))))
	if len(sink.evs) != 2 || m.Stats().Held != 1 {
		t.Fatalf("released %v, held %d; want 0 and 1 released, 3 held", seqs(sink.evs), m.Stats().Held)
	}
	m.Tick(now.Add(500 * time.Millisecond))
	if len(sink.evs) != 2 {
		t.Fatal("the gap was given up before the reorder wait")
	}
	m.Tick(now.Add(time.Second))
	if len(sink.evs) != 3 || m.Stats().Lost != 1 {
		t.Fatalf("after the wait: released %v, lost %d; want 3 released and 1 lost", seqs(sink.evs), m.Stats().Lost)
	}
	mergeAll(t, m, now, marshal(t, request("s", 0, kernelSpan(2, 0, 2000, 2010), kernelSpan(6, 0, 6000, 6010))))
	if st := m.Stats(); st.Duplicates != 1 || st.Held != 1 {
		t.Fatalf("stats %+v; want the late 2 counted a duplicate and 6 held", st)
	}
	m.Flush()
	if st := m.Stats(); len(sink.evs) != 4 || st.Lost != 3 || st.Held != 0 {
		t.Fatalf("after Flush: released %v, stats %+v; want 6 released, 4 and 5 lost", seqs(sink.evs), st)
	}
}

// The ring grows as far as a sender runs ahead, and gives up the oldest gap past its bound.
func TestMergeRingBound(t *testing.T) {
	var sink collect
	m := NewMerger(timeline.NewStrings(), time.Hour, func(timeline.Meta) timeline.Sink { return &sink })
	now := time.Now()
	mergeAll(t, m, now, marshal(t, request("s", 0, kernelSpan(1, 0, 1000, 1010), kernelSpan(20_000, 0, 2e7, 2e7+1))))
	if st := m.Stats(); st.Held != 2 || st.Lost != 0 {
		t.Fatalf("stats %+v; want both held (the ring grows)", st)
	}
	mergeAll(t, m, now, marshal(t, request("s", 0, kernelSpan(maxReorder+5, 0, 3e8, 3e8+1))))
	if st := m.Stats(); st.Lost == 0 || len(sink.evs) < 2 {
		t.Fatalf("stats %+v, released %d; want the oldest gaps given up", st, len(sink.evs))
	}
}

// Default-detail senders (no seq) are released at once, in end order, a step after its ops; spans
// without xfertop.kind are counted foreign.
func TestMergeUnnumbered(t *testing.T) {
	var sink collect
	m := NewMerger(timeline.NewStrings(), time.Second, func(timeline.Meta) timeline.Sink { return &sink })
	step := &tracepb.Span{StartTimeUnixNano: uint64(epoch), EndTimeUnixNano: uint64(epoch + 5000), Attributes: attrs(str("xfertop.kind", "step"), num("xfertop.step", 3))}
	send := &tracepb.Span{StartTimeUnixNano: uint64(epoch + 100), EndTimeUnixNano: uint64(epoch + 5000),
		Attributes: attrs(str("xfertop.kind", "send"), num("xfertop.peer", 1), num("xfertop.bytes", 4096))}
	cp := &tracepb.Span{StartTimeUnixNano: uint64(epoch), EndTimeUnixNano: uint64(epoch + 50),
		Attributes: attrs(str("xfertop.kind", "memcpy"), str("xfertop.copy.direction", "h2d"))}
	coll := &tracepb.Span{StartTimeUnixNano: uint64(epoch), EndTimeUnixNano: uint64(epoch + 70),
		Attributes: attrs(str("xfertop.kind", "collective"), str("xfertop.collective", "all_gather"), num("xfertop.ranks", 8))}
	foreign := &tracepb.Span{Name: "GET /", StartTimeUnixNano: uint64(epoch), EndTimeUnixNano: uint64(epoch + 1)}
	req := request("", 0, step, send, cp, coll, foreign)
	req.ResourceSpans[0].Resource.Attributes[4] = str("xfertop.detail", "spans")
	mergeAll(t, m, time.Now(), marshal(t, req))
	if len(sink.evs) != 4 {
		t.Fatalf("released %d events; want 4", len(sink.evs))
	}
	kinds := []timeline.Kind{timeline.KindMemcpy, timeline.KindCollective, timeline.KindSend, timeline.KindStep}
	for i, k := range kinds {
		if sink.evs[i].Kind != k {
			t.Fatalf("event %d is %v; want %v (end order, the step last)", i, sink.evs[i].Kind, k)
		}
	}
	if e := sink.evs[0]; timeline.CopyDir(e.Sub) != timeline.CopyH2D {
		t.Errorf("copy direction %v", timeline.CopyDir(e.Sub))
	}
	if e := sink.evs[1]; timeline.CollOp(e.Sub) != timeline.CollAllGather || e.Ranks != 8 {
		t.Errorf("collective %v over %d ranks", timeline.CollOp(e.Sub), e.Ranks)
	}
	if e := sink.evs[3]; e.Aux != 3 {
		t.Errorf("step number %d; want 3", e.Aux)
	}
	st := m.Stats()
	if st.Foreign != 1 || len(st.Partial) == 0 {
		t.Errorf("stats %+v; want one foreign span and the partial parts named", st)
	}
}

// countSink counts events without keeping them.
type countSink struct{ n int }

func (c *countSink) Emit(*timeline.Event) { c.n++ }

// Merging a sender's stream in order allocates nothing per event: the merger hands its sink its
// own copy of each event (handing it a pointer to a local copy put every event on the heap).
func TestMergeDoesNotAllocatePerEvent(t *testing.T) {
	var sink countSink
	m := NewMerger(timeline.NewStrings(), time.Second, func(timeline.Meta) timeline.Sink { return &sink })
	const n = 512
	reqs := make([]Decoded, 8)
	for i := range reqs {
		if err := Decode(marshal(t, kernels("s1", int64(i*n), n)), &reqs[i], 0); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	m.Merge(&reqs[0], now)
	i := 1
	allocs := testing.AllocsPerRun(len(reqs)-2, func() {
		m.Merge(&reqs[i], now)
		i++
	})
	if sink.n < 2*n || allocs >= n/8 {
		t.Errorf("%v allocations merging a request of %d events (%d events out); want far fewer than one an event", allocs, n, sink.n)
	}
}

// A stream that arrives in order (a Collector forwards each sender's spans in order) is released
// without the reorder ring, which is made only once an event comes early: then the stream is the
// same whichever way each event went.
func TestMergeInOrderSkipsTheRing(t *testing.T) {
	var sink collect
	m := NewMerger(timeline.NewStrings(), time.Second, func(timeline.Meta) timeline.Sink { return &sink })
	now := time.Now()
	mergeAll(t, m, now, marshal(t, kernels("s", 0, 5)), marshal(t, kernels("s", 5, 5)))
	s := m.sessions["s"]
	if len(sink.evs) != 10 || len(s.ring) != 0 {
		t.Fatalf("released %v with a ring of %d slots; want 0..9 and no ring", seqs(sink.evs), len(s.ring))
	}
	// 12 comes early (held in the ring), 10 and 11 fill the gap, 13 follows in order; 3 again is a duplicate.
	mergeAll(t, m, now, marshal(t, request("s", 0, kernelSpan(12, 0, 12_000, 12_001), kernelSpan(10, 0, 10_000, 10_001),
		kernelSpan(11, 0, 11_000, 11_001), kernelSpan(13, 0, 13_000, 13_001), kernelSpan(3, 0, 3000, 3001))))
	got := seqs(sink.evs)
	for i, q := range got {
		if q != int64(i) {
			t.Fatalf("released %v; want 0..13 in order", got)
		}
	}
	if st := m.Stats(); len(got) != 14 || st.Duplicates != 1 || st.Held != 0 || len(s.ring) == 0 {
		t.Errorf("released %d, stats %+v, ring %d slots; want 14, one duplicate, none held, a ring once 12 came early", len(got), st, len(s.ring))
	}
}

// withSeed is request's resource with the run's seed said.
func withSeed(r *collectortrace.ExportTraceServiceRequest, seed string) *collectortrace.ExportTraceServiceRequest {
	res := r.ResourceSpans[0].Resource
	res.Attributes = append(res.Attributes, str("xfertop.meta.seed", seed))
	return r
}

// A second job into the same listener (a run after the first, on the same hosts, or with another
// seed) is told apart: its spans are left out, so that no figure mixes two jobs' steps, and
// OtherJobs says which session and why. A second session of the same job (another process,
// sending its own host) is merged.
func TestMergeTellsJobsApart(t *testing.T) {
	tests := []struct {
		name   string
		second *collectortrace.ExportTraceServiceRequest
		events int    // released in all
		why    string // in OtherJobs[0]; "" for none
	}{
		{"another process of the job, its own host", request("s2", 1, kernelSpan(0, 8, 0, 10), kernelSpan(1, 8, 10, 20)), 5, ""},
		{"a later run on the same host", request("s2", 0, kernelSpan(0, 0, 0, 10), kernelSpan(1, 0, 10, 20)), 3, "it sends host-0, which session s1 sent"},
		{"another seed, other hosts", withSeed(request("s2", 1, kernelSpan(0, 8, 0, 10), kernelSpan(1, 8, 10, 20)), "9"), 3, "it ran test seed 9, the first job test seed 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var sink collect
			m := NewMerger(timeline.NewStrings(), time.Second, func(timeline.Meta) timeline.Sink { return &sink })
			mergeAll(t, m, time.Now(), marshal(t, kernels("s1", 0, 3)), marshal(t, tc.second))
			st := m.Stats()
			if len(sink.evs) != tc.events {
				t.Errorf("released %d events; want %d", len(sink.evs), tc.events)
			}
			switch {
			case tc.why == "" && len(st.OtherJobs) != 0:
				t.Errorf("other jobs %q; want none", st.OtherJobs)
			case tc.why != "" && (len(st.OtherJobs) != 1 || !strings.Contains(st.OtherJobs[0], "session s2 is another job ("+tc.why)):
				t.Errorf("other jobs %q; want session s2, because %s", st.OtherJobs, tc.why)
			case tc.why != "" && (st.Invalid != 2 || len(st.Hosts) != 1):
				t.Errorf("%d spans left out, hosts %+v; want s2's 2, and s1's host alone", st.Invalid, st.Hosts)
			}
		})
	}
}
