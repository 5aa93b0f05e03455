package report

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/timeline"
)

// handBuilt is a small timeline whose report numbers are worked out by hand in TestBuild.
func handBuilt() ([]timeline.Event, *timeline.Strings) {
	s := timeline.NewStrings()
	nd := timeline.NoDevice
	ev := []timeline.Event{
		// Two steps of 1000 and 3000 ns; a failed step is not counted.
		{Kind: timeline.KindStep, Start: 0, End: 1000, Device: nd, Peer: nd},
		{Kind: timeline.KindStep, Start: 1000, End: 4000, Device: nd, Peer: nd},
		{Kind: timeline.KindStep, Start: 4000, End: 9000, Device: nd, Peer: nd, Status: timeline.StatusError},
		// H2D copies: 1000 B in 100 ns (10 GB/s), 3000 B in 100 ns (30 GB/s), 2000 B in 100 ns (20 GB/s):
		// p50 20 GB/s.
		{Kind: timeline.KindMemcpy, Sub: uint8(timeline.CopyH2D), Device: 0, Stream: 1, Start: 0, End: 100, Bytes: 1000, Peer: nd},
		{Kind: timeline.KindMemcpy, Sub: uint8(timeline.CopyH2D), Device: 0, Stream: 1, Start: 100, End: 200, Bytes: 3000, Peer: nd},
		{Kind: timeline.KindMemcpy, Sub: uint8(timeline.CopyH2D), Device: 0, Stream: 1, Start: 200, End: 300, Bytes: 2000, Peer: nd},
		// One send/recv pair of 500 B in 50 ns: 10 GB/s each.
		{Kind: timeline.KindSend, Device: 0, Peer: 1, Stream: 2, Start: 300, End: 350, Bytes: 500, Op: 9},
		{Kind: timeline.KindRecv, Device: 1, Peer: 0, Stream: 3, Start: 300, End: 350, Bytes: 500, Op: 9},
		// An all-reduce over 2 ranks of 8000 B; instance op 20 spans [1000, 1400) (400 ns), instance 21
		// spans [2000, 2200) (200 ns): p50 of {400, 200} by nearest rank = 200 ns; algbw bytes-weighted
		// 16000 B / 600 ns = 26.67 GB/s, busbw × 2·1/2 = 26.67 GB/s.
		{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Ranks: 2, Bytes: 8000, Op: 20, Device: 0, Stream: 2, Start: 1000, End: 1300, Peer: nd},
		{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Ranks: 2, Bytes: 8000, Op: 20, Device: 1, Stream: 3, Start: 1100, End: 1400, Peer: nd},
		{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Ranks: 2, Bytes: 8000, Op: 21, Device: 0, Stream: 2, Start: 2000, End: 2200, Peer: nd},
		{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Ranks: 2, Bytes: 8000, Op: 21, Device: 1, Stream: 3, Start: 2000, End: 2100, Peer: nd},
		// Communicator cache: comm 1 created on two ranks (900 and 1000 ns: the comm costs 1000), comm 2
		// in 20 ns; 3 hits, 1 eviction.
		{Kind: timeline.KindCommInit, Comm: 1, Device: 0, Start: 0, End: 900, Peer: nd},
		{Kind: timeline.KindCommInit, Comm: 1, Device: 1, Start: 0, End: 1000, Peer: nd},
		{Kind: timeline.KindCommInit, Comm: 2, Device: 2, Start: 0, End: 20, Peer: nd},
		{Kind: timeline.KindCommHit, Comm: 1, Device: 0, Peer: nd}, {Kind: timeline.KindCommHit, Comm: 1, Device: 0, Peer: nd}, {Kind: timeline.KindCommHit, Comm: 1, Device: 0, Peer: nd},
		{Kind: timeline.KindCommEvict, Device: nd, Peer: nd},
		// Two group launches fusing 3 and 5 ops.
		{Kind: timeline.KindGroupLaunch, Aux: 3, Device: 0, Peer: nd}, {Kind: timeline.KindGroupLaunch, Aux: 5, Device: 1, Peer: nd},
		// Barrier 30 over ranks 0,1,2: arrivals 100, 200, 700, release 710. Waits 610+510+10 = 1130,
		// max 610; rank 2 last, median arrival 200: lateness 500.
		// Barrier 31: arrivals 0, 50, 60, release 70; rank 2 last again, median 50: lateness 10.
		{Kind: timeline.KindBarrier, Ranks: 3, Op: 30, Device: 0, Start: 100, End: 710, Peer: nd},
		{Kind: timeline.KindBarrier, Ranks: 3, Op: 30, Device: 1, Start: 200, End: 710, Peer: nd},
		{Kind: timeline.KindBarrier, Ranks: 3, Op: 30, Device: 2, Start: 700, End: 710, Peer: nd},
		{Kind: timeline.KindBarrier, Ranks: 3, Op: 31, Device: 0, Start: 0, End: 70, Peer: nd},
		{Kind: timeline.KindBarrier, Ranks: 3, Op: 31, Device: 1, Start: 50, End: 70, Peer: nd},
		{Kind: timeline.KindBarrier, Ranks: 3, Op: 31, Device: 2, Start: 60, End: 70, Peer: nd},
		// An alert.
		{Kind: timeline.KindAlert, Status: timeline.StatusTimeout, Device: 0, Peer: 1, Op: 9, Bytes: 500, Label: s.ID("watchdog: send op 9 ...")},
	}
	return ev, s
}

// build runs the analysis over events and lays out the report, as every command does.
func build(events []timeline.Event, strs *timeline.Strings, m timeline.Meta) *Report {
	an := analysis.New(m)
	for i := range events {
		an.Emit(&events[i])
	}
	return Build(an.Result(strs), m, Run{})
}

func TestBuild(t *testing.T) {
	ev, strs := handBuilt()
	r := build(ev, strs, timeline.Meta{Source: "test", Backend: "sim", Topology: "h100x8", Devices: 8})
	// The communicators created in [0, 1000) fill the first step: it is all setup (0 ns of its own).
	if st := r.Steps; st.Count != 2 || st.SetupNs == nil || *st.SetupNs != 1000 || *st.MeanNs != 1500 || *st.P50Ns != 0 || *st.P99Ns != 3000 {
		t.Errorf("steps %+v", r.Steps)
	}
	h2d := r.Transfers.ByKind["h2d"]
	if h2d.Count != 3 || h2d.Bytes != 6000 || h2d.BusyNs != 300 || *h2d.GBps != 20 {
		t.Errorf("h2d %+v; want 3 copies, 6000 B in 300 ns = 20 GB/s", h2d)
	}
	if r.Transfers.Count != 4 || r.Transfers.Bytes != 6500 || *r.Transfers.ByKind["send"].GBps != 10 {
		t.Errorf("transfers %+v; want 3 copies and 1 send, 6500 B (the recv is the send's bytes)", r.Transfers)
	}
	for _, k := range timeline.TransferKinds {
		if _, ok := r.Transfers.ByKind[k]; !ok {
			t.Errorf("by_kind lacks %q", k)
		}
	}
	if len(r.Collectives) != 1 {
		t.Fatalf("collectives %+v", r.Collectives)
	}
	c := r.Collectives[0]
	if c.Op != "all_reduce" || c.Ranks != 2 || c.Bytes != 8000 || c.Count != 2 || *c.P50Ns != 200 || *c.AlgBW != 26.67 || *c.BusBW != 26.67 {
		t.Errorf("collective %+v", c)
	}
	// Op 20: rank 1 starts 100 ns after rank 0 (the median of two is the earlier); op 21: both
	// ranks start together, nobody is late.
	if cs := r.CollStragglers; len(cs) != 1 || cs[0].Rank != 1 || cs[0].TimesLast != 1 || *cs[0].LatenessNs50 != 100 {
		t.Errorf("collective stragglers %+v; want rank 1 once, 100 ns late", cs)
	}
	var txt strings.Builder
	if err := Text(&txt, r); err != nil || !strings.Contains(txt.String(), "rank 1 started last at 1 collective, 100 ns after the median rank (p50)") {
		t.Errorf("text report (%v) lacks the collective stragglers:\n%s", err, txt.String())
	}
	if cc := r.CommCache; cc.Hits != 3 || cc.Misses != 2 || cc.Evictions != 1 || cc.InitNsTotal != 1020 {
		t.Errorf("comm cache %+v", r.CommCache)
	}
	if r.Groups != (analysis.Groups{Known: true, Launches: 2, Ops: 8}) {
		t.Errorf("groups %+v", r.Groups)
	}
	b := r.Barriers
	if b.Count != 2 || b.WaitNs != 1130+(70+20+10) || b.MaxWaitNs != 610 {
		t.Errorf("barriers %+v", b)
	}
	if len(b.Stragglers) != 1 || b.Stragglers[0].Rank != 2 || b.Stragglers[0].TimesLast != 2 || *b.Stragglers[0].LatenessNs50 != 10 {
		t.Errorf("stragglers %+v; want rank 2 last twice, lateness p50 of {500, 10} = 10", b.Stragglers)
	}
	if len(r.Alerts) != 1 || r.Alerts[0].Kind != "watchdog" || r.Alerts[0].Bytes != 500 || len(r.Alerts[0].Ranks) != 2 {
		t.Errorf("alerts %+v", r.Alerts)
	}
	if r.DurationNs != 9000 {
		t.Errorf("duration %d; want 9000", r.DurationNs)
	}
}

// The JSON report has every key the issue lists, whatever the events.
func TestJSONKeys(t *testing.T) {
	ev, strs := handBuilt()
	for _, events := range [][]timeline.Event{ev, nil} {
		data, err := json.Marshal(build(events, strs, timeline.Meta{}))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		paths := []string{"source", "backend", "topology", "devices", "duration_ns", "events", "dropped_events",
			"steps.count", "steps.mean_ns", "steps.p50_ns", "steps.p99_ns",
			"transfers.count", "transfers.bytes", "transfers.by_kind.h2d.gbps", "transfers.by_kind.recv.count",
			"collectives", "collective_stragglers", "comm_cache.hits", "comm_cache.misses", "comm_cache.evictions", "comm_cache.init_ns_total",
			"groups.launches", "groups.ops", "barriers.count", "barriers.wait_ns_total", "barriers.max_wait_ns", "barriers.stragglers",
			"idle.total_ns", "idle.stream_gaps_ns", "idle.by_cause.host_wait", "idle.by_cause.kernel_wait", "idle.by_cause.event_wait",
			"idle.by_cause.barrier_wait", "idle.by_cause.peer_wait", "idle.by_cause.other", "idle.devices", "idle.top_gaps",
			"overlap.comm_compute_pct", "alerts", "links.moved_bytes", "links.devices"}
		for _, p := range paths {
			var cur any = m
			for _, part := range strings.Split(p, ".") {
				obj, ok := cur.(map[string]any)
				if !ok {
					t.Fatalf("%s: %v is not an object", p, cur)
				}
				if cur, ok = obj[part]; !ok {
					t.Errorf("JSON report lacks %s", p)
					break
				}
			}
		}
		for _, list := range []string{"collectives", "alerts"} {
			if m[list] == nil {
				t.Errorf("%s is null; want a list", list)
			}
		}
	}
}

func TestTelemetry(t *testing.T) {
	s := func(dev int32, m timeline.SampleMetric, v int64) timeline.Event {
		return timeline.Event{Kind: timeline.KindDeviceSample, Sub: uint8(m), Device: dev, Bytes: v}
	}
	evs := []timeline.Event{s(0, timeline.SampleUtilization, 40), s(0, timeline.SampleUtilization, 80), s(0, timeline.SamplePCIeRx, 50e9),
		s(1, timeline.SampleTempC, 70)}
	r := build(evs, timeline.NewStrings(), timeline.Meta{})
	if len(r.Telemetry) != 2 || r.Telemetry[0].Samples != 2 || r.Telemetry[0].Metrics.Map()["utilization_pct"] != (analysis.MeanMax{Mean: 60, Max: 80, Latest: 80}) ||
		r.Telemetry[0].Metrics.Map()["pcie_rx_bytes_per_s"].Max != 50e9 || r.Telemetry[1].Metrics.Map()["temperature_c"].Max != 70 {
		t.Errorf("telemetry %+v", r.Telemetry)
	}
}

// Unknown is not zero: a collective of unknown size has no bandwidth ("—", null), and overlap is
// undefined where nothing communicated.
func TestUnknownIsNotZero(t *testing.T) {
	nd := timeline.NoDevice
	ev := []timeline.Event{
		{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Ranks: 1, Op: 1, Device: 0, Stream: 1, Start: 0, End: 100, Peer: nd},
		{Kind: timeline.KindKernel, Device: 1, Stream: 2, Start: 0, End: 100, Peer: nd},
	}
	r := build(ev, timeline.NewStrings(), timeline.Meta{})
	if len(r.Collectives) != 1 || r.Collectives[0].AlgBW != nil || r.Collectives[0].BusBW != nil {
		t.Errorf("collective of unknown size: %+v; want no bandwidth", r.Collectives)
	}
	var b strings.Builder
	if err := Text(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "all_reduce      1        —      1") {
		t.Errorf("text shows the unknown size as a number:\n%s", b.String())
	}
	only := build(ev[1:], timeline.NewStrings(), timeline.Meta{})
	data, _ := json.Marshal(only)
	if !strings.Contains(string(data), `"overlap":{"comm_compute_pct":null}`) || !strings.Contains(string(data), `"overlap_pct":null`) {
		t.Errorf("overlap without communication is not null: %s", data)
	}
	b.Reset()
	_ = Text(&b, only)
	if !strings.Contains(b.String(), "overlapped with compute: — of communication time") {
		t.Errorf("text shows an undefined overlap as a number:\n%s", b.String())
	}
	// No step ended (a hang in the first): the communicators' setup is unknown, not 0, and the text
	// says no step completed instead of leaving the Steps line out.
	if !strings.Contains(string(data), `"setup_ns":null`) {
		t.Errorf("setup of a run without a step ended is not null: %s", data)
	}
	only.Ended = "watchdog: all_reduce op 421 on rank 0 waited 10.0 s for ranks [299] that never arrived (8 B)"
	b.Reset()
	_ = Text(&b, only)
	if !strings.Contains(b.String(), "Steps: none completed (the run ended early, before its first step ended") {
		t.Errorf("a run ended before its first step has no Steps line saying so:\n%s", b.String())
	}
}

// A straggler is named only when a rank started after all the others and after the median; when
// nobody was late the text says so, and the JSON lists none.
func TestStragglersText(t *testing.T) {
	nd := timeline.NoDevice
	coll := func(op uint64, ranks uint16, dev int32, start int64) timeline.Event {
		return timeline.Event{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Ranks: ranks, Bytes: 4096, Op: op,
			Device: dev, Stream: 1, Start: start, End: start + 1000, Peer: nd}
	}
	barrier := func(op uint64, dev int32, start int64) timeline.Event {
		return timeline.Event{Kind: timeline.KindBarrier, Ranks: 2, Op: op, Device: dev, Start: start, End: 500, Peer: nd}
	}
	const (
		collNone = "no straggler: no rank ever started a collective after all the others"
		barNone  = "no straggler: no rank ever arrived after all the others"
	)
	tests := []struct {
		name       string
		evs        []timeline.Event
		stragglers int
		has, lacks []string
	}{
		{"all together", []timeline.Event{coll(1, 2, 0, 0), coll(1, 2, 1, 0), coll(2, 2, 0, 5000), coll(2, 2, 1, 5000),
			barrier(3, 0, 100), barrier(3, 1, 100)}, 0,
			[]string{collNone, barNone}, []string{"started last", "arrived last"}},
		{"one late", []timeline.Event{coll(1, 2, 0, 0), coll(1, 2, 1, 30), barrier(3, 0, 100), barrier(3, 1, 160)}, 1,
			[]string{"rank 1 started last at 1 collective, 30 ns after the median rank (p50)", "rank 1 arrived last 1 time, 60 ns after the median (p50)"},
			[]string{collNone, barNone}},
		{"one rank: nothing to say", []timeline.Event{coll(1, 1, 0, 0)}, 0, nil, []string{collNone, "started last"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := build(tc.evs, timeline.NewStrings(), timeline.Meta{Source: "test", Backend: "sim", Devices: 2})
			var js struct {
				Stragglers []analysis.Straggler `json:"collective_stragglers"`
			}
			data, _ := json.Marshal(r)
			if err := json.Unmarshal(data, &js); err != nil || len(js.Stragglers) != tc.stragglers {
				t.Errorf("JSON collective_stragglers %+v (%v); want %d", js.Stragglers, err, tc.stragglers)
			}
			var txt strings.Builder
			if err := Text(&txt, r); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.has {
				if !strings.Contains(txt.String(), w) {
					t.Errorf("text lacks %q:\n%s", w, txt.String())
				}
			}
			for _, w := range tc.lacks {
				if strings.Contains(txt.String(), w) {
					t.Errorf("text has %q:\n%s", w, txt.String())
				}
			}
		})
	}
}

// The report's link section lists the hottest fabric switch ports with their share of the port's
// bandwidth, and says unknown where the bandwidth is not known.
func TestFabricPortsText(t *testing.T) {
	ev := []timeline.Event{
		{Kind: timeline.KindLinkBytes, Sub: timeline.PackLink(timeline.PeakNIC, timeline.LinkTx), Start: 0, End: 50_000_000, Bytes: 1e9, Peer: timeline.NoDevice},
		{Kind: timeline.KindLinkBytes, Sub: timeline.PackLink(timeline.LinkFabric, timeline.LinkTx), Start: 0, End: 50_000_000, Bytes: 1e9,
			Device: timeline.NoDevice, Peer: timeline.NoDevice, Aux: timeline.PackPort(1, 3)},
	}
	for _, tc := range []struct {
		portBps float64
		want    string
	}{
		{25e9, "leaf g1.r3  953.7 MiB   0 B      20.0 GB/s        80%"},
		{0, "unknown"},
	} {
		r := build(ev, timeline.NewStrings(), timeline.Meta{LinkBytes: true, FabricPortBps: tc.portBps, GPUsPerHost: 8})
		var b strings.Builder
		if err := Text(&b, r); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "Fabric switch ports") || !strings.Contains(b.String(), tc.want) {
			t.Errorf("port bandwidth %v: text lacks the hot port %q:\n%s", tc.portBps, tc.want, b.String())
		}
	}
}
