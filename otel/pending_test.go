package otel

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/xfertop/xfertop/timeline"
)

// A stream without step events (one host's share of a job whose steps another host exports) goes
// out as it comes, under tail roots on its own host, rather than all at the end: the events held
// for the next step are bounded.
func TestPendingBounded(t *testing.T) {
	mem := keepSpans{tracetest.NewInMemoryExporter()}
	x := NewWithExporter(Config{Detail: DetailFull, Epoch: time.Unix(1e9, 0)}, mem, timeline.NewStrings())
	const n = 2*maxPending + 10
	for i := range n {
		x.Emit(&timeline.Event{Kind: timeline.KindKernel, Device: 9, Host: 1, Stream: 1, Start: int64(i) * 10, End: int64(i)*10 + 5})
	}
	// The first two tails go out while the run goes on.
	for deadline := time.Now().Add(20 * time.Second); len(mem.GetSpans()) < 2*(maxPending+1); {
		if time.Now().After(deadline) {
			t.Fatalf("%d spans exported before the end; want the first %d events' under two tail roots", len(mem.GetSpans()), 2*maxPending)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := x.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := mem.GetSpans()
	tails := 0
	for _, s := range spans {
		for _, a := range s.Attributes {
			if a.Key == AttrTail {
				tails++
			}
		}
		if h, ok := s.Resource.Set().Value("host.name"); !ok || h.AsString() != "host-1" {
			t.Fatalf("span %q on %v; want host-1, the events' host", s.Name, h)
		}
	}
	if len(spans) != n+3 || tails != 3 {
		t.Errorf("%d spans, %d tail roots; want %d events under 3 tails", len(spans), tails, n)
	}
}

// keepSpans is an in-memory exporter whose spans outlive its shutdown.
type keepSpans struct{ *tracetest.InMemoryExporter }

func (keepSpans) Shutdown(context.Context) error { return nil }
