package otel_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/otel"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/timeline"
)

// The metrics of a trace whose devices are numbered 0, 20,000 and 2³¹−1 have every device's series,
// with the analysis's figures (the report's), on the trace's one host: the exporter stopped at
// 16,384 (and an id past its table of devices seen could not be looked up).
func TestMetricsFarDevices(t *testing.T) {
	r := newReceiver()
	r.startGRPC(t, "127.0.0.1:0")
	defer r.stop()
	meta := timeline.Meta{Source: "trace.json", Backend: "kineto", Topology: "unknown", Devices: 3, IdleMode: timeline.IdleHTA}
	cfg := configFor(t, r.addr, "grpc")
	cfg.Meta, cfg.Epoch = meta, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	strs := timeline.NewStrings()
	x, err := otel.New(context.Background(), *cfg, strs)
	if err != nil {
		t.Fatal(err)
	}
	an := analysis.New(meta)
	for i, d := range []int32{0, 20_000, 1<<31 - 1} {
		busy := int64(200_000 * (i + 1))
		for _, e := range []timeline.Event{
			{Kind: timeline.KindKernel, Device: d, Peer: -1, Stream: 7, Start: 0, End: busy, Queued: -1},
			{Kind: timeline.KindMemcpy, Sub: uint8(timeline.CopyD2D), Device: d, Peer: -1, Stream: 9, Start: busy, End: busy + 100_000, Bytes: 1 << 20, Queued: -1},
			{Kind: timeline.KindKernel, Device: d, Peer: -1, Stream: 7, Start: 900_000, End: 1_000_000, Queued: -1},
		} {
			an.Emit(&e)
			x.Emit(&e)
		}
	}
	if err := x.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	rep := report.Build(an.Result(strs), meta, report.Run{})
	if len(rep.Idle.Devices) != 3 {
		t.Fatalf("the report has %d device rows; want 3", len(rep.Idle.Devices))
	}
	got, _ := r.metricsService.snapshot()
	var end float64
	for k, v := range got {
		if strings.HasSuffix(k, " "+otel.MetricStreamEnd+"{}") {
			end = v
		}
	}
	want := expectedMetrics(rep, meta.LinkPeaks, end, false)
	for _, d := range []int32{20_000, 1<<31 - 1} {
		k := seriesKey("host-0", otel.MetricGPUTime, "hw.type=gpu", fmt.Sprintf("hw.id=gpu-%d", d), fmt.Sprintf("xfertop.device=%d", d), "xfertop.gpu.state=busy")
		if _, ok := want[k]; !ok {
			t.Fatalf("the report's figures lack %s", k)
		}
	}
	for k, v := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("%s: not received; the report says %v", k, v)
		case g != v:
			t.Errorf("%s = %v; the report says %v", k, g, v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s received; the report has no such figure", k)
		}
	}
}
