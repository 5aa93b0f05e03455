package report

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// A Flight Recorder or NCCL Inspector input records no kernels: the report says idle time, compute,
// overlap and the gaps' causes are unknown ("—", null), in text and JSON, in the per-device table
// and in the summary across devices, and ranks no device as most idle.
func TestNoKernelsReport(t *testing.T) {
	var ev []timeline.Event
	const devs = SummariseAbove + 16 // the summary across devices is checked too
	for d := range int32(devs) {
		for i := range int64(3) {
			ev = append(ev, timeline.Event{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Ranks: devs, Op: uint64(i + 1),
				Device: d, Stream: 1, Start: i * 1000, End: i*1000 + 100, Queued: i * 1000, Bytes: 4096, Peer: timeline.NoDevice})
		}
	}
	for _, backend := range []string{"flight-recorder", "nccl-inspector"} {
		t.Run(backend, func(t *testing.T) {
			r := build(ev, timeline.NewStrings(), timeline.Meta{Backend: backend, Devices: devs, IdleMode: timeline.IdleHTA})
			data, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			js := string(data)
			for _, want := range []string{`"idle":{"total_ns":null,"by_cause":null,`, `"overlap":{"comm_compute_pct":null}`, `"idle_pct":null`, `"cause":null`} {
				if !strings.Contains(js, want) {
					t.Errorf("JSON lacks %s", want)
				}
			}
			if strings.Contains(js, "host_wait") {
				t.Errorf("JSON names a gap cause the source cannot know")
			}
			for _, per := range []bool{false, true} {
				var b strings.Builder
				if err := TextWith(&b, r, TextOptions{PerDevice: per}); err != nil {
					t.Fatal(err)
				}
				txt := b.String()
				want := []string{"Idle: — (", "cause —", "Communication overlapped with compute: —"}
				if !per {
					want = append(want, "idle, idle %, compute %, non-compute %, overlap %: unknown on every device")
				}
				for _, want := range want {
					if !strings.Contains(txt, want) {
						t.Errorf("per-device %v: text lacks %q:\n%s", per, want, txt)
					}
				}
				// Without a topology the collectives' link is unknown; a device's total still counts
				// those bytes, not 0 B.
				for _, line := range strings.Split(txt, "\n") {
					if f := strings.Fields(line); len(f) > 1 && f[0] == "total" && strings.Contains(line, " 0 B") {
						t.Errorf("per-device %v: a total of 0 B beside bytes of unknown link: %q", per, line)
					}
				}
				for _, bad := range []string{"host_wait", "most idle", "90.0", " 0.0"} {
					if strings.Contains(txt, bad) {
						t.Errorf("per-device %v: text says %q:\n%s", per, bad, txt)
					}
				}
			}
		})
	}
}

// TestNoOpsReport: an NCCL RAS input records no ops: its span, transfers and gaps between ops are
// unknown ("—", null), not 0; a source with ops keeps them measured.
func TestNoOpsReport(t *testing.T) {
	strs := timeline.NewStrings()
	ev := []timeline.Event{{Kind: timeline.KindMark, Device: timeline.NoDevice, Peer: timeline.NoDevice, Queued: -1, Label: strs.ID("RAS communicator 0x1")}}
	for _, c := range []struct {
		backend string
		unknown bool
	}{{"nccl-ras", true}, {"flight-recorder", false}} {
		t.Run(c.backend, func(t *testing.T) {
			r := build(ev, strs, timeline.Meta{Backend: c.backend, Devices: 2, IdleMode: timeline.IdleHTA})
			data, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			js := string(data)
			var b strings.Builder
			if err := Text(&b, r); err != nil {
				t.Fatal(err)
			}
			txt := b.String()
			for _, want := range []string{`"duration_ns":null`, `"transfers":null`, `"stream_gaps_ns":null`, `"ops_unknown":"NCCL RAS`,
				"(2 devices), seed —, span —,", "Transfers: — (NCCL RAS records no ops", "Gaps between ops on streams: — (the source records no ops)"} {
				if strings.Contains(js+txt, want) != c.unknown {
					t.Errorf("report contains %q: %v; want %v\n%s\n%s", want, !c.unknown, c.unknown, js, txt)
				}
			}
			if c.unknown && (strings.Contains(txt, " 0 s") || strings.Contains(txt, "Transfers: 0")) {
				t.Errorf("text says 0 for what the source does not record:\n%s", txt)
			}
		})
	}
}
