package main

import (
	"cmp"
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/xfertop/xfertop/importers"
	"github.com/xfertop/xfertop/timeline"
)

// The real two-rank job's Flight Recorder dumps time each op from its creation on the host, so a
// rank's ops overlap on its stream (an op is created while the one before still runs). Idle time
// between them is the time no op ran: for each stream, its span (first start to last end) minus
// the union of its ops, worked out here from the imported events. Before, the analysis summed
// start − previous end as Holistic Trace Analysis does and reported −137.55 ms of gaps.
func TestRealJobFlightRecorderGapsNotNegative(t *testing.T) {
	dir := filepath.Join(realJob, "torch2", "fr")
	for _, tc := range []struct{ name, suffix string }{{"pickle", ""}, {"json", ".json"}} {
		t.Run(tc.name, func(t *testing.T) {
			files := []string{filepath.Join(dir, "nccl_trace_rank_0"+tc.suffix), filepath.Join(dir, "nccl_trace_rank_1"+tc.suffix)}
			im, err := importers.Read(files, importers.Options{})
			if err != nil {
				t.Fatal(err)
			}
			want, overlaps := uncoveredPerStream(im.Events)
			if overlaps == 0 {
				t.Fatal("no two ops of a stream overlap in the dumps: the test checks nothing")
			}
			code, out, errs := runCLI(t, append([]string{"analyze", "--json"}, files...)...)
			if code != exitOK {
				t.Fatalf("analyze: exit %d: %s", code, errs)
			}
			var r struct {
				IdleMode string `json:"idle_mode"`
				Idle     struct {
					StreamNs *int64 `json:"stream_gaps_ns"`
					Streams  []struct {
						Device  int32  `json:"device"`
						Stream  uint32 `json:"stream"`
						TotalNs int64  `json:"total_ns"`
					} `json:"streams"`
				} `json:"idle"`
			}
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			if r.IdleMode != "hta" {
				t.Errorf("idle_mode %q; want hta (the mode an imported trace is analysed in)", r.IdleMode)
			}
			var sum int64
			got := map[streamKey]int64{}
			for _, s := range r.Idle.Streams {
				got[streamKey{s.Device, s.Stream}] = s.TotalNs
				if s.TotalNs < 0 {
					t.Errorf("stream %d/%d: %d ns of gaps; idle time is never negative", s.Device, s.Stream, s.TotalNs)
				}
			}
			for k, v := range want {
				sum += v
				if got[k] != v {
					t.Errorf("stream %d/%d: %d ns of gaps; want %d (span − union of its ops)", k.dev, k.stream, got[k], v)
				}
			}
			if len(got) != len(want) {
				t.Errorf("%d streams in the report; want %d", len(got), len(want))
			}
			if r.Idle.StreamNs == nil || *r.Idle.StreamNs != sum {
				t.Errorf("stream_gaps_ns %s; want %d", fmtNs(r.Idle.StreamNs), sum)
			}
		})
	}
}

type streamKey struct {
	dev    int32
	stream uint32
}

// uncoveredPerStream is, per stream, the time between its first op's start and its last op's end
// that no op covers, of the busy ops whose time is known; and how many ops started before an
// earlier op of their stream ended.
func uncoveredPerStream(evs []timeline.Event) (map[streamKey]int64, int) {
	type iv struct{ s, e int64 }
	ops := map[streamKey][]iv{}
	for _, e := range evs {
		if e.Stream == 0 || !e.Kind.IsBusy() || e.TimeUnknown() {
			continue
		}
		k := streamKey{e.Device, e.Stream}
		ops[k] = append(ops[k], iv{e.Start, e.End})
	}
	out := map[streamKey]int64{}
	overlaps := 0
	for k, os := range ops {
		slices.SortFunc(os, func(a, b iv) int { return cmp.Compare(a.s, b.s) })
		var busy int64
		cur := os[0]
		last := os[0].e
		for _, o := range os[1:] {
			if o.s < last {
				overlaps++
			}
			last = max(last, o.e)
			if o.s > cur.e {
				busy += cur.e - cur.s
				cur = o
				continue
			}
			cur.e = max(cur.e, o.e)
		}
		busy += cur.e - cur.s
		out[k] = last - os[0].s - busy
	}
	return out, overlaps
}

// fmtNs is a nullable figure as the report writes it.
func fmtNs(p *int64) string {
	if p == nil {
		return "null"
	}
	return strconv.FormatInt(*p, 10)
}
