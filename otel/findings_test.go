package otel

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/xfertop/xfertop/timeline"
)

// A finding goes out once, as an xfertop.finding event on the root span of the step it was found
// in, naming its culprit: here a GPU whose kernels take twice its peers'.
func TestFindingSpanEvents(t *testing.T) {
	mem := keepSpans{tracetest.NewInMemoryExporter()}
	x := NewWithExporter(Config{Detail: DetailFull, Epoch: time.Unix(1e9, 0), Meta: timeline.Meta{GPUsPerHost: 8}}, mem, timeline.NewStrings())
	const ms = 1_000_000
	for step := range 3 {
		t0 := int64(step) * 100 * ms
		for d := int32(0); d < 8; d++ {
			dur := int64(ms)
			if d == 5 {
				dur = 2 * ms
			}
			for i := range 10 {
				at := t0 + int64(i)*3*ms
				x.Emit(&timeline.Event{Kind: timeline.KindKernel, Device: d, Stream: uint32(d + 1), Start: at, End: at + dur, Queued: at, Label: 1})
			}
		}
		x.Emit(&timeline.Event{Kind: timeline.KindStep, Start: t0, End: t0 + 100*ms, Device: -1, Peer: -1, Aux: uint32(step)})
	}
	if err := x.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range mem.GetSpans() {
		for _, ev := range s.Events {
			if ev.Name != "xfertop.finding" {
				continue
			}
			n++
			for _, a := range ev.Attributes {
				if a.Key == "xfertop.finding.culprit" && a.Value.AsString() != "rank 5 (host 0 GPU 5)" {
					t.Errorf("culprit %q; want rank 5", a.Value.AsString())
				}
			}
		}
	}
	if n != 1 {
		t.Errorf("%d finding events; want exactly one", n)
	}
}
