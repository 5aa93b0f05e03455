package report

import (
	"sort"

	"github.com/xfertop/xfertop/timeline"
)

// Meta describes where the events came from.
type Meta struct {
	Source        string            // "sim", a recording's path, a trace's path
	Scenario      string            // scenario name, when a workload ran
	Knobs         map[string]string // knob values the run used
	Backend       string
	Topology      string
	Devices       int
	Seed          int64
	DroppedEvents int64
	IdleMode      timeline.IdleMode
	KernelWaitNs  int64  // 0: timeline.DefaultKernelWaitNs
	Ended         string // why the run ended early, if it did
	Export        *Export
	Mapping       string // how ranks were placed on GPUs (cuda backend)
}

// Export is how the OpenTelemetry export went (absent when there was none).
type Export struct {
	Endpoint      string `json:"endpoint"`
	Protocol      string `json:"protocol"`
	State         string `json:"state"`
	SpansBuilt    int64  `json:"spans_built"`
	SpansExported int64  `json:"spans_exported"`
	SpansDropped  int64  `json:"spans_dropped"`
	EventsDropped int64  `json:"events_dropped"`
	StepsSkipped  int64  `json:"steps_skipped"` // by the sampling ratio or the span budget
}

// Report is the headless report. JSON keys are part of xfertop's interface: add, never rename.
type Report struct {
	Source        string            `json:"source"`
	Scenario      string            `json:"scenario,omitempty"`
	Knobs         map[string]string `json:"knobs,omitempty"`
	Backend       string            `json:"backend"`
	Topology      string            `json:"topology"`
	Devices       int               `json:"devices"`
	Seed          int64             `json:"seed"`
	DurationNs    int64             `json:"duration_ns"`
	Events        int               `json:"events"`
	DroppedEvents int64             `json:"dropped_events"`
	Ended         string            `json:"ended,omitempty"`
	Steps         Steps             `json:"steps"`
	Transfers     Transfers         `json:"transfers"`
	Collectives   []Collective      `json:"collectives"`
	CommCache     CommCache         `json:"comm_cache"`
	Groups        Groups            `json:"groups"`
	Barriers      Barriers          `json:"barriers"`
	Idle          Idle              `json:"idle"`
	Overlap       Overlap           `json:"overlap"`
	Alerts        []Alert           `json:"alerts"`
	Export        *Export           `json:"export,omitempty"`
	Mapping       string            `json:"mapping,omitempty"`
	Telemetry     []DeviceTelemetry `json:"telemetry,omitempty"`
}

// DeviceTelemetry summarises one device's NVML samples: for each metric, the mean and the maximum.
// Throughputs are bytes/s, memory bytes, power milliwatts.
type DeviceTelemetry struct {
	Device  int32              `json:"device"`
	Samples int                `json:"samples"`
	Metrics map[string]MeanMax `json:"metrics"`
}

// MeanMax is a metric's mean and maximum.
type MeanMax struct {
	Mean float64 `json:"mean"`
	Max  int64   `json:"max"`
}

var sampleNames = map[timeline.SampleMetric]string{
	timeline.SampleUtilization: "utilization_pct", timeline.SampleMemoryUsed: "memory_used_bytes",
	timeline.SamplePCIeRx: "pcie_rx_bytes_per_s", timeline.SamplePCIeTx: "pcie_tx_bytes_per_s",
	timeline.SampleNVLinkRx: "nvlink_rx_bytes_per_s", timeline.SampleNVLinkTx: "nvlink_tx_bytes_per_s",
	timeline.SamplePowerMilliW: "power_milliwatts", timeline.SampleSMClockMHz: "sm_clock_mhz", timeline.SampleTempC: "temperature_c",
}

func telemetry(events []timeline.Event) []DeviceTelemetry {
	type acc struct {
		sum float64
		n   int
		max int64
	}
	per := map[int32]map[string]*acc{}
	count := map[int32]int{}
	for i := range events {
		e := &events[i]
		if e.Kind != timeline.KindDeviceSample {
			continue
		}
		name, ok := sampleNames[timeline.SampleMetric(e.Sub)]
		if !ok {
			continue
		}
		m := per[e.Device]
		if m == nil {
			m = map[string]*acc{}
			per[e.Device] = m
		}
		a := m[name]
		if a == nil {
			a = &acc{max: e.Bytes}
			m[name] = a
		}
		a.sum += float64(e.Bytes)
		a.n++
		a.max = max(a.max, e.Bytes)
		if timeline.SampleMetric(e.Sub) == timeline.SampleUtilization {
			count[e.Device]++
		}
	}
	var out []DeviceTelemetry
	for d, m := range per {
		t := DeviceTelemetry{Device: d, Samples: count[d], Metrics: map[string]MeanMax{}}
		for k, a := range m {
			t.Metrics[k] = MeanMax{Mean: round2(a.sum / float64(a.n)), Max: a.max}
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Device < out[j].Device })
	return out
}

// Steps summarises step durations.
type Steps struct {
	Count  int   `json:"count"`
	MeanNs int64 `json:"mean_ns"`
	P50Ns  int64 `json:"p50_ns"`
	P99Ns  int64 `json:"p99_ns"`
}

// Transfers counts copies and point-to-point transfers.
type Transfers struct {
	Count  int                  `json:"count"`
	Bytes  int64                `json:"bytes"`
	ByKind map[string]KindStats `json:"by_kind"`
	BySize []SizeStats          `json:"by_size"`
}

// SizeStats is one (kind, size) row: the transfers of exactly that many bytes.
type SizeStats struct {
	Kind      string  `json:"kind"`
	Bytes     int64   `json:"bytes"`
	Count     int     `json:"count"`
	TimeNsP50 int64   `json:"time_ns_p50"`
	GBpsP50   float64 `json:"gbps_p50"`
}

// KindStats is one transfer kind's totals; GBpsP50 is the median of each transfer's bytes/duration.
type KindStats struct {
	Count   int     `json:"count"`
	Bytes   int64   `json:"bytes"`
	GBpsP50 float64 `json:"gbps_p50"`
}

// Collective is one (op, ranks, bytes) row: nccl-tests algbw = bytes / time, busbw = algbw × factor.
type Collective struct {
	Op        string  `json:"op"`
	Ranks     int     `json:"ranks"`
	Bytes     int64   `json:"bytes"`
	Count     int     `json:"count"`
	TimeNsP50 int64   `json:"time_ns_p50"`
	AlgBW     float64 `json:"algbw_gbps"`
	BusBW     float64 `json:"busbw_gbps"`
}

// CommCache is what the communicator cache did, from its events.
type CommCache struct {
	Hits        int   `json:"hits"`
	Misses      int   `json:"misses"`
	Evictions   int   `json:"evictions"`
	InitNsTotal int64 `json:"init_ns_total"`
}

// Groups counts NCCL-style group launches and the ops they fused.
type Groups struct {
	Launches int `json:"launches"`
	Ops      int `json:"ops"`
}

// Barriers summarises barrier waits; each other rank's wait is release − its arrival.
type Barriers struct {
	Count      int         `json:"count"`
	WaitNs     int64       `json:"wait_ns_total"`
	MaxWaitNs  int64       `json:"max_wait_ns"`
	Stragglers []Straggler `json:"stragglers"`
}

// Straggler is a rank that arrived last at barriers: how often, and how late (last arrival − median
// arrival) at the median.
type Straggler struct {
	Rank         int32 `json:"rank"`
	TimesLast    int   `json:"times_last"`
	LatenessNs50 int64 `json:"lateness_ns_p50"`
}

// Idle is idle time by cause, the per-device temporal breakdown, and the largest gaps.
type Idle struct {
	TotalNs int64            `json:"total_ns"`
	ByCause map[string]int64 `json:"by_cause"`
	Devices []DeviceIdle     `json:"devices"`
	TopGaps []GapRow         `json:"top_gaps"`
}

// DeviceIdle is one device's temporal breakdown in percent of its span.
type DeviceIdle struct {
	Device     int32   `json:"device"`
	IdleNs     int64   `json:"idle_ns"`
	IdlePct    float64 `json:"idle_pct"`
	ComputePct float64 `json:"compute_pct"`
	NonCompPct float64 `json:"non_compute_pct"`
}

// GapRow is one idle gap.
type GapRow struct {
	Device  int32  `json:"device"`
	Stream  uint32 `json:"stream"`
	StartNs int64  `json:"start_ns"`
	DurNs   int64  `json:"dur_ns"`
	Cause   string `json:"cause"`
}

// Overlap is HTA's communication/computation overlap over all devices:
// |union(compute ∩ comm)| / |union(comm)|.
type Overlap struct {
	CommComputePct float64 `json:"comm_compute_pct"`
}

// Alert is a watchdog or error alert.
type Alert struct {
	Kind    string  `json:"kind"`
	Message string  `json:"message"`
	Op      uint64  `json:"op"`
	Ranks   []int32 `json:"ranks"`
	Bytes   int64   `json:"bytes"`
}

// TopGaps is how many gaps the report lists.
const TopGaps = 10

// Build computes the report over events. strs resolves labels.
func Build(events []timeline.Event, strs *timeline.Strings, m Meta) *Report {
	r := &Report{Source: m.Source, Scenario: m.Scenario, Knobs: m.Knobs, Backend: m.Backend, Topology: m.Topology,
		Devices: m.Devices, Seed: m.Seed, Events: len(events), DroppedEvents: m.DroppedEvents, Ended: m.Ended,
		Collectives: []Collective{}, Alerts: []Alert{}, Export: m.Export, Mapping: m.Mapping}
	if len(events) > 0 {
		lo, hi := events[0].Start, events[0].End
		for i := range events {
			lo, hi = min(lo, events[i].Start), max(hi, events[i].End)
		}
		r.DurationNs = hi - lo
	}
	r.Steps = steps(events)
	r.Transfers = transfers(events)
	r.Collectives = collectives(events)
	r.CommCache, r.Groups = commAndGroups(events)
	r.Barriers = barriers(events)
	kw := m.KernelWaitNs
	if kw == 0 {
		kw = timeline.DefaultKernelWaitNs
	}
	r.Idle, r.Overlap = idle(events, m.IdleMode, kw)
	r.Telemetry = telemetry(events)
	for i := range events {
		e := &events[i]
		if e.Kind != timeline.KindAlert {
			continue
		}
		kind := "error"
		if e.Status == timeline.StatusTimeout {
			kind = "watchdog"
		}
		a := Alert{Kind: kind, Message: strs.Lookup(e.Label), Op: e.Op, Bytes: e.Bytes, Ranks: []int32{}}
		for _, d := range [2]int32{e.Device, e.Peer} {
			if d >= 0 {
				a.Ranks = append(a.Ranks, d)
			}
		}
		r.Alerts = append(r.Alerts, a)
	}
	return r
}

func steps(events []timeline.Event) Steps {
	var durs []int64
	var sum int64
	for i := range events {
		if events[i].Kind == timeline.KindStep && events[i].Status == timeline.StatusOK {
			d := events[i].Dur()
			durs = append(durs, d)
			sum += d
		}
	}
	if len(durs) == 0 {
		return Steps{}
	}
	s := Steps{Count: len(durs), MeanNs: sum / int64(len(durs))}
	s.P50Ns = timeline.Percentile(durs, 50)
	s.P99Ns = timeline.Percentile(durs, 99)
	return s
}

// TransferKinds are the by_kind keys, always present.
var TransferKinds = []string{"h2d", "d2h", "d2d", "p2p", "send", "recv"}

func transferKind(e *timeline.Event) string {
	switch e.Kind {
	case timeline.KindSend:
		return "send"
	case timeline.KindRecv:
		return "recv"
	case timeline.KindMemcpy:
		return timeline.CopyDir(e.Sub).String()
	}
	return ""
}

func transfers(events []timeline.Event) Transfers {
	t := Transfers{ByKind: map[string]KindStats{}, BySize: []SizeStats{}}
	rates := map[string][]float64{}
	type sk struct {
		kind  string
		bytes int64
	}
	sizeRates, sizeTimes := map[sk][]float64{}, map[sk][]int64{}
	for _, k := range TransferKinds {
		t.ByKind[k] = KindStats{}
	}
	for i := range events {
		e := &events[i]
		k := transferKind(e)
		if k == "" || e.Status != timeline.StatusOK {
			continue
		}
		ks := t.ByKind[k]
		ks.Count++
		ks.Bytes += e.Bytes
		t.ByKind[k] = ks
		if k != "memset" { // a memset moves no data from one place to another
			t.Count++
			t.Bytes += e.Bytes
		}
		if d := e.Dur(); d > 0 {
			rates[k] = append(rates[k], float64(e.Bytes)/float64(d))
			key := sk{k, e.Bytes}
			sizeRates[key] = append(sizeRates[key], float64(e.Bytes)/float64(d))
			sizeTimes[key] = append(sizeTimes[key], d)
		}
	}
	if len(sizeRates) <= 512 { // a table per size only where sizes repeat (sweeps), not for ragged traffic
		for key, rs := range sizeRates {
			t.BySize = append(t.BySize, SizeStats{Kind: key.kind, Bytes: key.bytes, Count: len(rs),
				TimeNsP50: timeline.Percentile(sizeTimes[key], 50), GBpsP50: round2(timeline.Percentile(rs, 50))})
		}
		sort.Slice(t.BySize, func(i, j int) bool {
			a, b := t.BySize[i], t.BySize[j]
			if a.Kind != b.Kind {
				return a.Kind < b.Kind
			}
			return a.Bytes < b.Bytes
		})
	}
	for k, rs := range rates {
		ks := t.ByKind[k]
		ks.GBpsP50 = round2(timeline.Percentile(rs, 50))
		t.ByKind[k] = ks
	}
	return t
}

type collKey struct {
	op    timeline.CollOp
	ranks int
	bytes int64
}

func collectives(events []timeline.Event) []Collective {
	type inst struct {
		key        collKey
		start, end int64
		sum        int64
		n          int
	}
	insts := map[uint64]*inst{}
	var order []uint64
	for i := range events {
		e := &events[i]
		if e.Kind != timeline.KindCollective || e.Status != timeline.StatusOK {
			continue
		}
		in := insts[e.Op]
		if in == nil {
			in = &inst{key: collKey{timeline.CollOp(e.Sub), int(e.Ranks), e.Bytes}, start: e.Start, end: e.End}
			insts[e.Op] = in
			order = append(order, e.Op)
		}
		in.start, in.end = min(in.start, e.Start), max(in.end, e.End)
		in.sum += e.Bytes
		in.n++
	}
	times := map[collKey][]int64{}
	for _, id := range order {
		in := insts[id]
		k := in.key
		if k.op == timeline.CollRaggedAllToAll {
			k.bytes = in.sum / int64(in.n) // ragged: the mean bytes a rank sent
		}
		times[k] = append(times[k], in.end-in.start)
	}
	out := make([]Collective, 0, len(times))
	for k, ts := range times {
		p50 := timeline.Percentile(ts, 50)
		c := Collective{Op: k.op.String(), Ranks: k.ranks, Bytes: k.bytes, Count: len(ts), TimeNsP50: p50}
		if p50 > 0 {
			c.AlgBW = round2(float64(k.bytes) / float64(p50))
			c.BusBW = round2(c.AlgBW * k.op.BusFactor(k.ranks))
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Op != b.Op {
			return a.Op < b.Op
		}
		if a.Ranks != b.Ranks {
			return a.Ranks < b.Ranks
		}
		return a.Bytes < b.Bytes
	})
	return out
}

func commAndGroups(events []timeline.Event) (CommCache, Groups) {
	var c CommCache
	var g Groups
	initDur := map[uint32]int64{}
	for i := range events {
		e := &events[i]
		switch e.Kind {
		case timeline.KindCommHit:
			c.Hits++
		case timeline.KindCommEvict:
			c.Evictions++
		case timeline.KindCommInit:
			initDur[e.Comm] = max(initDur[e.Comm], e.Dur())
		case timeline.KindGroupLaunch:
			g.Launches++
			g.Ops += int(e.Aux)
		}
	}
	c.Misses = len(initDur)
	for _, d := range initDur {
		c.InitNsTotal += d
	}
	return c, g
}

func barriers(events []timeline.Event) Barriers {
	type arrival struct {
		rank        int32
		arrive, rel int64
	}
	insts := map[uint64][]arrival{}
	var order []uint64
	for i := range events {
		e := &events[i]
		if e.Kind != timeline.KindBarrier {
			continue
		}
		if _, ok := insts[e.Op]; !ok {
			order = append(order, e.Op)
		}
		insts[e.Op] = append(insts[e.Op], arrival{e.Device, e.Start, e.End})
	}
	b := Barriers{Count: len(order), Stragglers: []Straggler{}}
	last := map[int32][]int64{}
	for _, id := range order {
		as := insts[id]
		arr := make([]int64, len(as))
		lateIdx := 0
		for i, a := range as {
			w := a.rel - a.arrive
			b.WaitNs += w
			b.MaxWaitNs = max(b.MaxWaitNs, w)
			arr[i] = a.arrive
			if a.arrive > as[lateIdx].arrive {
				lateIdx = i
			}
		}
		if len(as) < 2 {
			continue
		}
		med := timeline.Percentile(arr, 50)
		last[as[lateIdx].rank] = append(last[as[lateIdx].rank], as[lateIdx].arrive-med)
	}
	for rank, lat := range last {
		b.Stragglers = append(b.Stragglers, Straggler{Rank: rank, TimesLast: len(lat), LatenessNs50: timeline.Percentile(lat, 50)})
	}
	sort.Slice(b.Stragglers, func(i, j int) bool {
		x, y := b.Stragglers[i], b.Stragglers[j]
		if x.TimesLast != y.TimesLast {
			return x.TimesLast > y.TimesLast
		}
		return x.Rank < y.Rank
	})
	return b
}

func idle(events []timeline.Event, mode timeline.IdleMode, kernelWaitNs int64) (Idle, Overlap) {
	out := Idle{ByCause: map[string]int64{}, Devices: []DeviceIdle{}, TopGaps: []GapRow{}}
	for _, c := range timeline.Causes() {
		out.ByCause[c.String()] = 0
	}
	gaps := timeline.IdleGaps(events, mode, kernelWaitNs)
	for _, g := range gaps {
		out.TotalNs += g.Dur
		out.ByCause[g.Cause.String()] += g.Dur
	}
	for _, g := range topGaps(gaps, TopGaps) {
		if g.Dur <= 0 {
			break
		}
		out.TopGaps = append(out.TopGaps, GapRow{Device: g.Device, Stream: g.Stream, StartNs: g.Start, DurNs: g.Dur, Cause: g.Cause.String()})
	}
	var comm, ov int64
	for _, d := range timeline.Breakdown(events) {
		row := DeviceIdle{Device: d.Device, IdleNs: d.IdleNs}
		if d.SpanNs > 0 {
			row.IdlePct = pct(d.IdleNs, d.SpanNs)
			row.ComputePct = pct(d.ComputeNs, d.SpanNs)
			row.NonCompPct = pct(d.NonCompNs, d.SpanNs)
		}
		out.Devices = append(out.Devices, row)
		comm += d.CommNs
		ov += d.OverlapNs
	}
	var o Overlap
	if comm > 0 {
		o.CommComputePct = pct(ov, comm)
	}
	return out, o
}

func pct(a, b int64) float64 { return round2(100 * float64(a) / float64(b)) }

func round2(x float64) float64 {
	if x < 0 {
		return -round2(-x)
	}
	return float64(int64(x*100+0.5)) / 100
}

// topGaps returns the k longest gaps, longest first (earliest first among equals), without sorting
// them all: reports over millions of events have millions of gaps.
func topGaps(gaps []timeline.Gap, k int) []timeline.Gap {
	longer := func(a, b timeline.Gap) bool {
		if a.Dur != b.Dur {
			return a.Dur > b.Dur
		}
		return a.Start < b.Start
	}
	top := make([]timeline.Gap, 0, k+1)
	for _, g := range gaps {
		if len(top) == k && !longer(g, top[k-1]) {
			continue
		}
		i := sort.Search(len(top), func(i int) bool { return longer(g, top[i]) })
		top = append(top, timeline.Gap{})
		copy(top[i+1:], top[i:])
		top[i] = g
		if len(top) > k {
			top = top[:k]
		}
	}
	return top
}
