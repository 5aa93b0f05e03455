package receiver

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/xfertop/xfertop/timeline"
)

// absurd is a numbered kernel span of session s with the given raw wall-clock times and seq.
func absurd(seq int64, start, end uint64) *tracepb.Span {
	sp := kernelSpan(seq, 0, 0, 0)
	sp.StartTimeUnixNano, sp.EndTimeUnixNano = start, end
	return sp
}

// A span whose times or sequence number cannot be its sender's is left out, counted and logged,
// and nothing it says reaches a total: the good spans around it come out as sent, nothing is
// counted lost, and every time stays within the sender's window.
func TestMergeLeavesOutAbsurdSpans(t *testing.T) {
	const maxU64, maxI64 = math.MaxUint64, math.MaxInt64
	bytesSpan := func(b int64) *tracepb.Span {
		sp := kernelSpan(1, 0, 1000, 2000)
		sp.Attributes = append(sp.Attributes, num("xfertop.bytes", b))
		return sp
	}
	queued := func(q int64) *tracepb.Span {
		sp := kernelSpan(1, 0, 1000, 2000)
		sp.Attributes = append(sp.Attributes, num("xfertop.queued_ns", q))
		return sp
	}
	tests := []struct {
		name string
		bad  *tracepb.Span
		why  string
	}{
		{"start 0", absurd(1, 0, uint64(epoch+2000)), "not a wall-clock time"},
		{"end 2^64-1", absurd(1, uint64(epoch+1000), maxU64), "not a wall-clock time"},
		{"start 0, end 2^64-1", absurd(1, 0, maxU64), "not a wall-clock time"},
		{"end before start", absurd(1, uint64(epoch+5000), uint64(epoch+1000)), "ends"},
		{"longer than a day", absurd(1, uint64(epoch+1000), uint64(epoch+1000+int64(25*time.Hour))), "longer than"},
		{"a week before the epoch", absurd(1, uint64(epoch-int64(7*24*time.Hour)), uint64(epoch-int64(7*24*time.Hour)+10)), "before its sender's epoch"},
		{"a year after the epoch", absurd(1, uint64(epoch+int64(365*24*time.Hour)), uint64(epoch+int64(365*24*time.Hour)+10)), "after its sender's epoch"},
		{"seq 2^63-1", kernelSpan(maxI64, 0, 1000, 2000), "xfertop.seq"},
		{"seq far ahead of its time", kernelSpan(1<<40, 0, 1000, 2000), "xfertop.seq"},
		{"bytes 2^63-1", bytesSpan(maxI64), "xfertop.bytes"},
		{"negative bytes", bytesSpan(-1), "xfertop.bytes"},
		{"queued a year before", queued(-int64(365 * 24 * time.Hour)), "xfertop.queued_ns"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var sink collect
			var logged []string
			m := NewMerger(timeline.NewStrings(), time.Second, func(timeline.Meta) timeline.Sink { return &sink })
			m.SetLog(func(reason, format string, a ...any) {
				logged = append(logged, reason+": "+strings.TrimSpace(fmt.Sprintf(format, a...)))
			})
			now := time.Unix(0, epoch).Add(time.Minute)
			// seq 1 is the absurd span; 0, 1 (again, sound) and 2 are good: the good 1 fills its place.
			mergeAll(t, m, now, marshal(t, request("s", 0, kernelSpan(0, 0, 0, 1000), tc.bad, kernelSpan(1, 0, 1000, 2000), kernelSpan(2, 0, 2000, 3000))))
			m.Flush()
			st := m.Stats()
			if st.Invalid != 1 || st.Lost != 0 || st.Duplicates != 0 || st.Spans != 3 || st.Hosts[0].Spans != 3 {
				t.Errorf("stats %+v; want 1 invalid, 3 spans taken, nothing lost or duplicated", st)
			}
			if len(sink.evs) != 3 {
				t.Fatalf("released %d events; want the 3 good ones", len(sink.evs))
			}
			for i, e := range sink.evs {
				if e.Start != int64(i)*1000 || e.End != e.Start+1000 || e.Bytes != 0 || e.Queued != 0 {
					t.Errorf("event %d: %+v; want [%d, %d) as sent", i, e, i*1000, i*1000+1000)
				}
			}
			if off := st.Hosts[0].OffsetNs; off != int64(time.Minute)-3000 {
				t.Errorf("clock offset %d; want %d (from the good spans only)", off, int64(time.Minute)-3000)
			}
			if len(logged) != 1 || !strings.Contains(logged[0], tc.why) || !strings.Contains(logged[0], "host-0") {
				t.Errorf("logged %q; want one line naming host-0 and saying %q", logged, tc.why)
			}
		})
	}
}

// A sender whose epoch lies years from the first sender's is not merged onto its axis: its spans
// are left out and counted, and the first sender's stream is untouched.
func TestMergeRefusesAFarSender(t *testing.T) {
	var sink collect
	m := NewMerger(timeline.NewStrings(), time.Second, func(timeline.Meta) timeline.Sink { return &sink })
	now := time.Unix(0, epoch).Add(time.Minute)
	mergeAll(t, m, now, marshal(t, kernels("near", 0, 3)))
	far := request("far", 1, absurd(0, uint64(epoch-int64(3*365*24*time.Hour)), uint64(epoch-int64(3*365*24*time.Hour)+1000)))
	far.ResourceSpans[0].Resource.Attributes[5] = str("xfertop.meta.epoch_unix_ns", "0") // unsaid: taken from its first span
	mergeAll(t, m, now, marshal(t, far))
	m.Flush()
	if st := m.Stats(); st.Invalid != 1 || st.Spans != 3 || len(sink.evs) != 3 {
		t.Errorf("stats %+v, released %d; want the far sender's span left out, the near one's 3 taken", st, len(sink.evs))
	}
}

// Ten thousand spans with absurd fields from one sender leave every total of the merged stream
// sound: none is taken, nothing is counted lost, no time leaves the window.
func TestMergeManyAbsurdSpans(t *testing.T) {
	var sink collect
	m := NewMerger(timeline.NewStrings(), time.Second, func(timeline.Meta) timeline.Sink { return &sink })
	now := time.Unix(0, epoch).Add(time.Minute)
	spans := []*tracepb.Span{kernelSpan(0, 0, 0, 1000)}
	for i := range 10_000 {
		switch i % 3 {
		case 0:
			spans = append(spans, absurd(1<<63-1, 0, math.MaxUint64))
		case 1:
			spans = append(spans, absurd(int64(i), 0, math.MaxUint64))
		default:
			spans = append(spans, kernelSpan(1<<63-1-int64(i), 0, 1000, 2000))
		}
	}
	spans = append(spans, kernelSpan(1, 0, 1000, 2000))
	mergeAll(t, m, now, marshal(t, request("s", 0, spans...)))
	m.Flush()
	st := m.Stats()
	if st.Invalid != 10_000 || st.Lost != 0 || st.Spans != 2 || len(sink.evs) != 2 {
		t.Fatalf("stats %+v, released %d; want 10000 invalid, 2 taken, 0 lost", st, len(sink.evs))
	}
	for _, e := range sink.evs {
		if e.Start < 0 || e.End > 2000 {
			t.Errorf("event %+v outside [0, 2000)", e)
		}
	}
}
