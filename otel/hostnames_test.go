package otel

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/xfertop/xfertop/timeline"
)

// Where a source of the job named its hosts (the ranks' plugins, through attach as they join, or
// the merged recordings' description), each host's resource carries that name as host.name and
// a finding's culprit names its host by it; a host no source named stays host-N. Before the host
// map carried the names, every resource was host-N and the culprit "rank 5 (host 1)".
func TestHostNames(t *testing.T) {
	for _, c := range []struct {
		name string
		meta map[string]string // the description's names
		live map[int32]string  // the names a live source gives (NameHost)
	}{
		{"live", nil, map[int32]string{1: "node-b"}},
		{"description", map[string]string{timeline.HostNameKey(1): "node-b"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			extra := map[string]string{timeline.HostsInEventsKey: "1"}
			for k, v := range c.meta {
				extra[k] = v
			}
			mem := keepSpans{tracetest.NewInMemoryExporter()}
			x := NewWithExporter(Config{Detail: DetailFull, Epoch: time.Unix(1e9, 0), Meta: timeline.Meta{Devices: 8, Extra: extra}}, mem, timeline.NewStrings())
			for h, n := range c.live {
				x.NameHost(h, n)
			}
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
						// Devices 0-3 on host 0 (no name), 4-7 on host 1 (node-b).
						x.Emit(&timeline.Event{Kind: timeline.KindKernel, Device: d, Host: uint16(d / 4), Stream: uint32(d + 1), Start: at, End: at + dur, Queued: at, Label: 1})
					}
				}
				x.Emit(&timeline.Event{Kind: timeline.KindStep, Start: t0, End: t0 + 100*ms, Device: -1, Peer: -1, Aux: uint32(step)})
			}
			if err := x.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			hosts := map[string]bool{}
			culprit := ""
			for _, s := range mem.GetSpans() {
				for _, a := range s.Resource.Attributes() {
					if a.Key == "host.name" {
						hosts[a.Value.AsString()] = true
					}
				}
				for _, ev := range s.Events {
					for _, a := range ev.Attributes {
						if ev.Name == "xfertop.finding" && a.Key == "xfertop.finding.culprit" {
							culprit = a.Value.AsString()
						}
					}
				}
			}
			if !hosts["node-b"] || !hosts["host-0"] || len(hosts) != 2 {
				t.Errorf("resources' host.name %v; want node-b (the name given) and host-0 (none given)", hosts)
			}
			if culprit != "rank 5 (host node-b)" {
				t.Errorf("finding culprit %q; want rank 5 (host node-b)", culprit)
			}
		})
	}
}

// A rank no source placed (timeline.NoHost, a partial join) is on an unknown host: its
// resource's host.name says so rather than "host-65535".
func TestUnknownHostName(t *testing.T) {
	x := NewWithExporter(Config{Detail: DetailFull, Epoch: time.Unix(1e9, 0), Meta: timeline.Meta{Devices: 2}}, keepSpans{tracetest.NewInMemoryExporter()}, timeline.NewStrings())
	defer x.Close(context.Background())
	if got := x.hostName(timeline.NoHost); got != "unknown" {
		t.Errorf("hostName(NoHost) = %q; want unknown", got)
	}
	if got := x.hostName(2); got != "host-2" {
		t.Errorf("hostName(2) = %q; want host-2", got)
	}
}
