package receiver

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/timeline"
)

// benchRequests is a full-detail stream as the exporter sends it: requests of 1024 spans, each
// step's spans in reverse order (children end before their parents), 8 devices each running a
// kernel, a copy and its rank of an all-reduce per step.
func benchRequests(tb testing.TB, n int) [][]byte {
	var reqs [][]byte
	seq := int64(0)
	t := int64(0)
	var spans []*tracepb.Span
	flush := func() {
		reqs = append(reqs, marshal(tb, &collectortrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
			Resource: resource("bench", 0), ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}}}}))
		spans = nil
	}
	for step := 0; len(reqs) < n; step++ {
		var stepSpans []*tracepb.Span
		for dev := range int64(8) {
			k := kernelSpan(seq, int32(dev), t+dev, t+dev+50_000)
			cp := &tracepb.Span{Name: "memcpy h2d", StartTimeUnixNano: uint64(epoch + t + 50_000), EndTimeUnixNano: uint64(epoch + t + 60_000), Attributes: attrs(
				str("xfertop.kind", "memcpy"), num("xfertop.device", dev), num("xfertop.stream", 2+dev*4), num("xfertop.priority", 0),
				num("xfertop.op", seq+1), num("xfertop.bytes", 1<<20), str("xfertop.copy.direction", "h2d"), num("xfertop.sub", 1), num("xfertop.seq", seq+1))}
			ar := &tracepb.Span{Name: "all_reduce", StartTimeUnixNano: uint64(epoch + t + 60_000), EndTimeUnixNano: uint64(epoch + t + 90_000), Attributes: attrs(
				str("xfertop.kind", "collective"), num("xfertop.device", dev), num("xfertop.stream", 3+dev*4), num("xfertop.priority", -3),
				num("xfertop.op", int64(1_000_000+step)), num("xfertop.bytes", 64<<20), num("xfertop.communicator", 1),
				str("xfertop.collective", "all_reduce"), num("xfertop.ranks", 8), num("xfertop.sub", 1), num("xfertop.seq", seq+2))}
			stepSpans = append(stepSpans, k, cp, ar)
			seq += 3
		}
		root := &tracepb.Span{Name: "step", StartTimeUnixNano: uint64(epoch + t), EndTimeUnixNano: uint64(epoch + t + 100_000), Attributes: attrs(
			str("xfertop.kind", "step"), num("xfertop.step", int64(step)), num("xfertop.seq", seq))}
		seq++
		stepSpans = append(stepSpans, root)
		for i := len(stepSpans) - 1; i >= 0; i-- {
			spans = append(spans, stepSpans[i])
			if len(spans) == 1024 {
				flush()
			}
		}
		t += 100_000
	}
	return reqs
}

// BenchmarkReceive decodes full-detail OTLP requests and folds their events into the analysis:
// the receiver's whole path from bytes to numbers, on one core with -cpu 1.
//
//	go test -run '^$' -bench BenchmarkReceive -cpu 1 -count 6 ./receiver | benchstat -
func BenchmarkReceive(b *testing.B) {
	reqs := benchRequests(b, 64)
	bytes := 0
	for _, r := range reqs {
		bytes += len(r)
	}
	var d Decoded
	now := time.Now()
	spans := 0
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		an := analysis.New(timeline.Meta{GPUsPerHost: 8, Devices: 8})
		m := NewMerger(timeline.NewStrings(), time.Second, func(timeline.Meta) timeline.Sink { return an })
		for _, r := range reqs {
			if err := Decode(r, &d, 0); err != nil {
				b.Fatal(err)
			}
			m.Merge(&d, now)
			spans += len(d.Spans)
		}
		m.Flush()
		if an.Events() != int64(64*1024) {
			b.Fatalf("%d events analysed; want %d", an.Events(), 64*1024)
		}
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(spans)/sec, "spans/s")
	// Per second of CPU this process used (GC included): the figure per core on a busy machine,
	// where wall time also counts the time other processes held the core.
	b.ReportMetric(float64(spans)/(cpuTime()-cpu0).Seconds(), "spans/cpu-s")
	b.ReportMetric(float64(bytes)/float64(64*1024), "B/span")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkDecode is Decode alone.
func BenchmarkDecode(b *testing.B) {
	reqs := benchRequests(b, 16)
	var d Decoded
	spans := 0
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range reqs {
			if err := Decode(r, &d, 0); err != nil {
				b.Fatal(err)
			}
			spans += len(d.Spans)
		}
	}
	b.ReportMetric(float64(spans)/b.Elapsed().Seconds(), "spans/s")
	b.ReportMetric(0, "ns/op")
}

// cpuTime is the CPU time (user + system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// collectorBatches are requests as a Collector forwards cmd/xfertop's
// BenchmarkListenCollector4096GPUs load: its batch processor joins 16 hosts' requests of 512
// kernel spans (64 GPUs a host, two streams each) into one request of 8,192 spans, written
// backwards (pdata: a KeyValue's value before its key). r numbers the batches.
func collectorBatches(n int) [][]byte {
	var reqs [][]byte
	for r := range n {
		req := &collectortrace.ExportTraceServiceRequest{}
		for h := range 16 {
			spans := make([]*tracepb.Span, 512)
			for i := range spans {
				seq := int64(r*512 + i)
				start := int64(seq/16) * 10_000
				spans[i] = &tracepb.Span{Name: "kernel", StartTimeUnixNano: uint64(epoch + start), EndTimeUnixNano: uint64(epoch + start + 9_000),
					Attributes: attrs(str("xfertop.kind", "kernel"), num("xfertop.device", int64(h*64+i%64)), num("xfertop.stream", int64(1+(i/64)%2)),
						num("xfertop.seq", seq), str("xfertop.label", "gemm"))}
			}
			req.ResourceSpans = append(req.ResourceSpans, &tracepb.ResourceSpans{Resource: resource(fmt.Sprintf("bench-%d", h), h),
				ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}})
		}
		reqs = append(reqs, marshalBackwards(req))
	}
	return reqs
}

// BenchmarkDecodeCollector is Decode of the Collector's batches, per CPU second.
//
//	go test -run '^$' -bench DecodeCollector -cpu 1 -count 6 ./receiver | benchstat -
func BenchmarkDecodeCollector(b *testing.B) {
	reqs := collectorBatches(4)
	var d Decoded
	spans := 0
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		for _, r := range reqs {
			if err := Decode(r, &d, 0); err != nil {
				b.Fatal(err)
			}
			spans += len(d.Spans)
		}
	}
	b.ReportMetric(float64(spans)/(cpuTime()-cpu0).Seconds(), "spans/cpu-s")
	b.ReportMetric(0, "ns/op")
}
