package analysis

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// A source that records only communication ops (Flight Recorder, NCCL Inspector, NCCL RAS) cannot
// tell idle time from compute between them, nor why a gap happened: those figures are unknown,
// written null, not ~90 % idle, 0 % compute and every gap a host wait. A source that records
// kernels, or such a source where kernels turn up after all, keeps its measured figures.
func TestNoKernelsIdleUnknown(t *testing.T) {
	// Two collectives with a gap of 800 ns between them: HTA would call most of the span idle.
	onStream := func(e timeline.Event) timeline.Event { e.Stream = 1; return e }
	colls := []timeline.Event{
		onStream(withQueued(collEv(timeline.CollAllReduce, 2, 0, 1, 0, 100, 4096), 0)),
		onStream(withQueued(collEv(timeline.CollAllReduce, 2, 0, 2, 900, 1000, 4096), 850)),
	}
	withKernel := append([]timeline.Event{kern(0, 7, 200, 800)}, colls...)
	tests := []struct {
		backend string
		evs     []timeline.Event
		unknown bool
	}{
		{"flight-recorder", colls, true},
		{"nccl-inspector", colls, true},
		{"nccl-ras", colls, true},
		{"kineto", colls, false},
		{"sim", colls, false},
		{"flight-recorder", withKernel, false},
	}
	for _, tc := range tests {
		name := tc.backend
		if len(tc.evs) > len(colls) {
			name += " with a kernel"
		}
		t.Run(name, func(t *testing.T) {
			r := analyze(timeline.Meta{Backend: tc.backend, IdleMode: timeline.IdleHTA}, tc.evs...)
			if r.Breakdown.NoKernels != tc.unknown || r.StreamIdle.CausesUnknown != tc.unknown {
				t.Fatalf("no_kernels %v, causes_unknown %v; want %v", r.Breakdown.NoKernels, r.StreamIdle.CausesUnknown, tc.unknown)
			}
			if len(r.Breakdown.Devices) != 1 {
				t.Fatalf("devices %+v; want one", r.Breakdown.Devices)
			}
			d := r.Breakdown.Devices[0]
			dev, _ := json.Marshal(d)
			var gaps []byte
			if len(r.StreamIdle.Streams) > 0 {
				gaps, _ = json.Marshal(r.StreamIdle.Streams[0])
			}
			top, _ := json.Marshal(r.StreamIdle.TopGaps)
			_, busyOK := d.BusyPct()
			if !tc.unknown {
				if !d.Known() || !busyOK || r.Breakdown.OverlapPct == nil || strings.Contains(string(dev), `"idle_pct":null`) ||
					strings.Contains(string(top), `"cause":null`) {
					t.Errorf("measured figures lost: %s, top gaps %s, overlap %v", dev, top, r.Breakdown.OverlapPct)
				}
				return
			}
			for _, k := range []string{"busy_ns", "idle_ns", "idle_pct", "compute_ns", "compute_pct", "non_compute_pct", "overlap_pct", "idle_cause"} {
				if !strings.Contains(string(dev), `"`+k+`":null`) {
					t.Errorf("device %s: want %s null", dev, k)
				}
			}
			if !strings.Contains(string(dev), `"span_ns":1000`) || !strings.Contains(string(dev), `"comm_ns":200`) {
				t.Errorf("device %s: want the measured span 1000 and communication 200", dev)
			}
			if d.Known() || busyOK || r.Breakdown.OverlapPct != nil || r.StreamIdle.ByCause != nil {
				t.Errorf("known %v, busy known %v, overlap %v, by cause %v; want all unknown", d.Known(), busyOK, r.Breakdown.OverlapPct, r.StreamIdle.ByCause)
			}
			if !strings.Contains(string(gaps), `"by_cause":null`) || strings.Contains(string(gaps), "host_wait") {
				t.Errorf("stream gaps %s: want by_cause null and no cause named", gaps)
			}
			if len(r.StreamIdle.TopGaps) == 0 || !strings.Contains(string(top), `"cause":null`) || strings.Contains(string(top), "host_wait") {
				t.Errorf("top gaps %s: want the gap kept with its cause null", top)
			}
			for _, g := range r.StreamIdle.Devices {
				if b, _ := json.Marshal(g); !strings.Contains(string(b), `"top_cause":null`) {
					t.Errorf("device gaps %s: want top_cause null", b)
				}
			}
		})
	}
}

// Flight Recorder, NCCL Inspector and NCCL RAS, alone or joined by rank in any combination,
// record no kernels; a backend with any other part does, as does one not named.
func TestRecordsKernels(t *testing.T) {
	for _, c := range []struct {
		backend string
		want    bool
	}{
		{"flight-recorder", false}, {"nccl-inspector", false}, {"nccl-ras", false},
		{"flight-recorder+nccl-inspector", false}, {"flight-recorder+nccl-ras", false},
		{"flight-recorder+nccl-inspector+nccl-ras", false}, {"nccl-inspector+nccl-ras", false},
		{"sim", true}, {"kineto", true}, {"flight-recorder+kineto", true}, {"", true},
	} {
		if got := RecordsKernels(timeline.Meta{Backend: c.backend}); got != c.want {
			t.Errorf("RecordsKernels(%q) = %v; want %v", c.backend, got, c.want)
		}
	}
}
