package report

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/analysis/hostmap"
	"github.com/xfertop/xfertop/timeline"
)

// Run is how the run that produced the stream went: what the stream itself cannot say.
type Run struct {
	Ended         string // why the run ended early, if it did
	DroppedEvents int64  // events a consumer dropped
	Export        *Export
	Receive       *Receive // what xfertop listen received, when the events came over OTLP
	// Partial names the parts of the report that are incomplete, and why (senders that exported
	// with the default detail leave kernels, waits and samples out).
	Partial []string
	// StepsFrom says how the steps of an input that marks none were found (importers.Result.Steps).
	StepsFrom string
	// Warnings say what the report cannot see that a reader would take for health (a RAS port
	// that could not be reached).
	Warnings []string
}

// Receive is what xfertop listen received (absent for other sources).
type Receive struct {
	Listen     string        `json:"listen"` // the addresses served
	Hosts      []ReceiveHost `json:"hosts"`
	Spans      int64         `json:"spans"`             // xfertop spans taken
	Foreign    int64         `json:"foreign_spans"`     // spans that are not xfertop's, ignored
	Lost       int64         `json:"lost_events"`       // numbered events that never came
	Duplicates int64         `json:"duplicate_events"`  // came twice (a retried request), dropped
	Refused    int64         `json:"refused_spans"`     // refused while the queue was full; the senders resent them
	Rejected   int64         `json:"rejected_requests"` // over a limit, malformed or unauthenticated
	// Invalid counts spans left out because what they say cannot be (times outside their sender's
	// window, a sequence number past its range, a size of no transfer); the log names each reason.
	Invalid int64 `json:"invalid_spans"`
	// OtherJobs names the senders left out as another job than the first one's (a run after it
	// into the same listener, on the same hosts): this report's figures are the first job's alone.
	OtherJobs []string `json:"other_jobs,omitempty"`
}

// ReceiveHost is one sending host.
type ReceiveHost struct {
	Name     string `json:"name"`
	Session  string `json:"session"`
	Detail   string `json:"detail"`
	Spans    int64  `json:"spans"`
	OffsetNs int64  `json:"clock_offset_ns"` // receive time − newest span end, at its smallest
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
	// DropReason is the error of the last export whose spans were dropped, kept when later exports
	// succeed (State is how the export goes at the end).
	DropReason   string `json:"drop_reason,omitempty"`
	StepsSkipped int64  `json:"steps_skipped"` // by the sampling ratio or the span budget
	// StepsExported are the steps whose spans were built; StepsOverRate those of StepsSkipped the
	// span budget skipped (MaxRate spans/s), the rest the sampling ratio (SampleRatio).
	StepsExported int64   `json:"steps_exported"`
	StepsOverRate int64   `json:"steps_over_rate"`
	SampleRatio   float64 `json:"sample_ratio"`
	MaxRate       float64 `json:"max_rate"`
	// OTLP metric data points: built = exported + dropped once the run has ended.
	MetricPoints         int64 `json:"metric_points"`
	MetricPointsExported int64 `json:"metric_points_exported"`
	MetricPointsDropped  int64 `json:"metric_points_dropped"`
}

// Report is the headless report. JSON keys are part of xfertop's interface (docs/report.md).
type Report struct {
	Source        string            `json:"source"`
	Scenario      string            `json:"scenario,omitempty"`
	Knobs         map[string]string `json:"knobs,omitempty"`
	Backend       string            `json:"backend"`
	Topology      string            `json:"topology"`
	Devices       int               `json:"devices"`
	GPUsPerHost   int               `json:"gpus_per_host,omitempty"`
	Seed          *int64            `json:"seed"` // null when no scenario ran (a trace, an attached job): no seed drove it
	IdleMode      string            `json:"idle_mode"`
	KernelWaitNs  int64             `json:"kernel_wait_ns"`
	DurationNs    int64             `json:"duration_ns"`
	Events        int64             `json:"events"`
	DroppedEvents int64             `json:"dropped_events"`
	Ended         string            `json:"ended,omitempty"`
	Steps         analysis.Steps    `json:"steps"`
	StepsFrom     string            `json:"steps_from,omitempty"` // how steps the input does not mark were inferred, or why none were
	// CriticalPath is the mean critical path per step, when asked for (analyze --critical-path).
	CriticalPath   *CriticalPath           `json:"critical_path,omitempty"`
	Transfers      analysis.Transfers      `json:"transfers"`
	SendRecv       []analysis.P2PIteration `json:"send_recv"`
	Collectives    []analysis.Collective   `json:"collectives"`
	CollIncomplete int64                   `json:"collectives_incomplete"`
	// CollPartial are the rows of the instances CollIncomplete counts, with the ranks seen of
	// those expected (analysis.Collectives.Partial): size and count known, time and bandwidths null.
	CollPartial    []analysis.Collective `json:"collectives_partial"`
	CollStragglers []analysis.Straggler  `json:"collective_stragglers"`
	CommCache      analysis.CommCache    `json:"comm_cache"`
	Groups         analysis.Groups       `json:"groups"`
	Barriers       analysis.Barriers     `json:"barriers"`
	Idle           Idle                  `json:"idle"`
	Overlap        Overlap               `json:"overlap"`
	Links          analysis.Links        `json:"links"`
	Findings       []Finding             `json:"findings"`
	// Hosts is each device's host as the analysis placed it (analysis/hostmap: the one map the
	// links, the findings, the console and the OTLP attributes place devices by), and HostsFrom
	// where that came from: topology, events (the hosts the ranks named), gpus-per-host or unknown.
	Hosts      []DeviceHost     `json:"hosts"`
	HostsFrom  string           `json:"hosts_from"`
	Alerts     []analysis.Alert `json:"alerts"`
	AlertCount int64            `json:"alert_count"`
	Export     *Export          `json:"export,omitempty"`
	Receive    *Receive         `json:"receive,omitempty"`
	Partial    []string         `json:"partial,omitempty"`
	Mapping    string           `json:"mapping,omitempty"`
	// Faults are the faults injected into the run, as --fault reads them (absent: none known).
	Faults []string `json:"faults,omitempty"`
	// Warnings say what the report could not see that its silence would hide (report.Run.Warnings).
	Warnings  []string                   `json:"warnings,omitempty"`
	Telemetry []analysis.DeviceTelemetry `json:"telemetry,omitempty"`
	// ProfilerCost is the NCCL profiler plugin's own cost per rank, as it measured it.
	ProfilerCost []analysis.ProfilerCost `json:"profiler_cost,omitempty"`
	// OpsUnknown says why the span, transfers and gaps between ops are unknown (analysis.NoOpsWhy:
	// a source that records no ops); duration_ns, transfers and idle.stream_gaps_ns are null then.
	// "" (the key always present) when they are measured.
	OpsUnknown string `json:"ops_unknown"`
}

// MarshalJSON writes what a source without ops cannot know (OpsUnknown) as null, not 0.
func (r Report) MarshalJSON() ([]byte, error) {
	type plain Report // without the method
	if r.OpsUnknown == "" {
		return json.Marshal(plain(r))
	}
	return json.Marshal(struct {
		DurationNs *int64              `json:"duration_ns"`
		Transfers  *analysis.Transfers `json:"transfers"`
		plain
	}{plain: plain(r)})
}

// Idle is idle time two ways: per device (HTA's temporal breakdown: the time no op of the device
// runs; TotalNs sums it over devices) and per stream (gaps between a stream's ops, by cause;
// StreamNs sums them over streams, the denominator of the cause shares).
type Idle struct {
	TotalNs  int64                 `json:"total_ns"`
	StreamNs int64                 `json:"stream_gaps_ns"`
	ByCause  map[string]int64      `json:"by_cause"`
	Devices  []analysis.DeviceTime `json:"devices"`
	Streams  []analysis.StreamIdle `json:"streams"`
	// DeviceGaps sums each device's stream gaps by cause, with the cause of most of them.
	DeviceGaps []analysis.DeviceGaps `json:"device_gaps"`
	TopGaps    []analysis.Gap        `json:"top_gaps"`
	// InSteps is the idle time inside the job's steps, the first step's communicator setup
	// (steps.setup_ns) and the time outside steps left out: what a comparison divides by the
	// steps. Null when no step completed, or the steps' spans were too many to keep.
	InSteps *analysis.IdleInSteps `json:"in_steps"`
	// Unknown says why device idle time and the gaps' causes are unknown (analysis.NoKernelsWhy:
	// a source that records no kernels); "" (the key always present) when they are measured. total_ns and by_cause are null then.
	Unknown string `json:"unknown"`
	// noOps: the source records no ops (Report.OpsUnknown), so stream_gaps_ns is null too.
	noOps bool
	// noTimes: the source records ops, but not one's time (each carries timeline.AuxTimeUnknown),
	// so no gap between them is measured: stream_gaps_ns is null, the text "—".
	noTimes bool
}

// MarshalJSON writes idle time a source cannot know (Unknown) as null, not 0.
func (i Idle) MarshalJSON() ([]byte, error) {
	type plain Idle // without the method
	if i.Unknown == "" {
		return json.Marshal(plain(i))
	}
	if i.noOps {
		return json.Marshal(struct {
			TotalNs  *int64            `json:"total_ns"`
			StreamNs *int64            `json:"stream_gaps_ns"`
			ByCause  *map[string]int64 `json:"by_cause"`
			plain
		}{plain: plain(i)})
	}
	return json.Marshal(struct {
		TotalNs *int64            `json:"total_ns"`
		ByCause *map[string]int64 `json:"by_cause"`
		plain
	}{plain: plain(i)})
}

// Overlap is HTA's communication/computation overlap, |union(compute ∩ comm)| / |union(comm)|,
// pooled over devices (Σ overlap / Σ communication); null when nothing communicated. Each device's
// own figure is in idle.devices[].overlap_pct.
type Overlap struct {
	CommComputePct *float64 `json:"comm_compute_pct"`
}

// seed is the seed a scenario ran with; nil when none ran (a trace, an attached job), where a
// seed of 0 would be a guess.
func seed(m timeline.Meta) *int64 {
	if m.Scenario == "" {
		return nil
	}
	s := m.Seed
	return &s
}

// TopGaps is how many gaps the report lists.
const TopGaps = 10

// Build lays out the analysis of a stream described by m, produced by a run that went as run says.
func Build(res *analysis.Result, m timeline.Meta, run Run) *Report {
	kw := m.KernelWaitNs
	if kw <= 0 {
		kw = analysis.DefaultKernelWaitNs
	}
	r := &Report{Source: m.Source, Scenario: m.Scenario, Knobs: m.Knobs, Backend: m.Backend, Topology: m.Topology,
		Devices: m.Devices, GPUsPerHost: m.GPUsPerHost, Seed: seed(m), IdleMode: m.IdleMode.String(), KernelWaitNs: kw,
		DurationNs: res.DurationNs, Events: res.Events, DroppedEvents: run.DroppedEvents, Ended: run.Ended,
		Steps: res.Steps, Transfers: res.Transfers, SendRecv: res.SendRecv, Collectives: res.Collectives.Rows, CollIncomplete: res.Collectives.Unreported(),
		CollPartial: res.Collectives.Partial, CollStragglers: res.Collectives.Stragglers,
		CommCache: res.CommCache, Groups: res.Groups, Barriers: res.Barriers, Links: res.Links, Alerts: res.Alerts,
		AlertCount: res.AlertCount, StepsFrom: run.StepsFrom, Export: run.Export, Receive: run.Receive, Partial: run.Partial, Mapping: m.Mapping, Faults: m.Faults,
		Telemetry: res.Telemetry, ProfilerCost: res.ProfilerCost,
		Findings: findings(res.Findings), Warnings: run.Warnings}
	if n := len(res.Breakdown.Devices); m.Devices > 0 && n > m.Devices {
		// More devices ran ops than the source counted (a trace's importer counts up to 65,536
		// devices): the header counts every device that has a row.
		r.Devices = n
	}
	devices := everyDevice(res.Breakdown.Devices, m.Devices)
	r.Hosts, r.HostsFrom = deviceHosts(res, devices, m)
	if r.Devices == 0 {
		// The source did not say its topology (a sender without xfertop.meta.*): the devices that
		// ran something are the ones known, and a count of 0 beside a table of them would be false.
		r.Devices = len(res.Breakdown.Devices)
	}
	gaps := res.StreamIdle
	r.Idle = Idle{TotalNs: res.Breakdown.IdleNs, StreamNs: gaps.TotalNs, ByCause: gaps.ByCause, Devices: devices,
		Streams: gaps.Streams, DeviceGaps: gaps.Devices, TopGaps: gaps.TopGaps[:min(len(gaps.TopGaps), TopGaps)],
		InSteps: res.Breakdown.InSteps}
	r.Overlap.CommComputePct = res.Breakdown.OverlapPct
	if res.Breakdown.NoKernels {
		r.Idle.Unknown = analysis.NoKernelsWhy
	}
	if analysis.OpsUnknown(res, m) {
		r.OpsUnknown = analysis.NoOpsWhy
		r.Idle.noOps = r.Idle.Unknown != ""
	} else if len(gaps.Streams) == 0 && UnknownTimes(res) > 0 {
		r.Idle.noOps = r.Idle.Unknown != ""
		r.Idle.noTimes = true
	}
	return r
}

// DeviceHost is a device and its host: null when the analysis does not know it. HostName is the
// host's name where a source of the job named it (the host each rank reported), null where none
// did: the number stays the key.
type DeviceHost struct {
	Device   int32   `json:"device"`
	Host     *int32  `json:"host"`
	HostName *string `json:"host_name"`
}

// deviceHosts places every device the report lists (its time rows, and those with bytes on a
// link) by the analysis's host map, and says where the map's answers came from.
func deviceHosts(res *analysis.Result, times []analysis.DeviceTime, m timeline.Meta) ([]DeviceHost, string) {
	hosts := res.Hosts
	if hosts == nil { // a Result not made by an Analyzer: the run's description places its devices
		hosts = hostmap.New(m)
	}
	ids := make([]int32, 0, len(times)+len(res.Links.Devices))
	for _, t := range times {
		ids = append(ids, t.Device)
	}
	for _, d := range res.Links.Devices {
		if d.Total > 0 || d.Unattributed > 0 {
			ids = append(ids, d.Device)
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	out := make([]DeviceHost, len(ids))
	for i, d := range ids {
		out[i].Device = d
		if h, ok := hosts.Host(d); ok {
			out[i].Host = &h
			if n, ok := hosts.Name(h); ok {
				out[i].HostName = &n
			}
		}
	}
	return out, hosts.Source().String()
}

// UnknownTimes counts the ops (transfers by kind, and collective instances) whose time their
// source does not know (timeline.AuxTimeUnknown): counted, but in no time figure.
func UnknownTimes(res *analysis.Result) int64 {
	var n int64
	for _, s := range res.Transfers.ByKind {
		n += s.UnknownTime
	}
	for _, c := range res.Collectives.Rows {
		n += c.UnknownTime
	}
	for _, c := range res.Collectives.Partial {
		n += c.UnknownTime
	}
	return n
}

// everyDevice is the breakdown's rows (by device id, of the devices that ran something) with a row
// of unknown figures for each other device of the job's n: a rank hung before its first op, often
// the culprit, is listed as unknown (as the console's overview lists it), not left out.
func everyDevice(devs []analysis.DeviceTime, n int) []analysis.DeviceTime {
	if len(devs) >= n || len(devs) > 0 && int(devs[len(devs)-1].Device) >= n {
		// Every device ran something, or the ids are not 0..n-1 (a trace's own device numbers):
		// which ids ran nothing is not known, and rows made up for 0..n-1 would be phantoms.
		return devs
	}
	out := make([]analysis.DeviceTime, 0, n)
	k := 0
	for d := range int32(min(n, analysis.MaxDevices)) {
		for k < len(devs) && devs[k].Device < d {
			out = append(out, devs[k]) // ids beyond the order: kept as they come
			k++
		}
		if k < len(devs) && devs[k].Device == d {
			out = append(out, devs[k])
			k++
			continue
		}
		out = append(out, analysis.DeviceTime{Device: d})
	}
	return append(out, devs[k:]...)
}

// EndedRoot is the root of the hang whose watchdog alert ended the run, as the diagnosis names it
// (analysis.Alert.Root); for a run a deadlock ended (nothing could move: the engine names the
// first op that can never run, on whatever device comes first, device 0 at 1,024 GPUs), the
// diagnosis's worst hang finding. nil when neither ended it or the diagnosis names no root.
func (r *Report) EndedRoot() *analysis.AlertRoot {
	if r == nil || r.Ended == "" {
		return nil
	}
	for i := range r.Alerts {
		if a := &r.Alerts[i]; a.Kind == "watchdog" && a.Message == r.Ended {
			return a.Root
		}
	}
	if !strings.HasPrefix(r.Ended, "deadlock:") {
		return nil
	}
	for i := range r.Findings {
		// Worst first: hangs, missing ranks and deadlocks lead.
		f := &r.Findings[i]
		switch f.Kind {
		case "hang", "missing rank", "deadlock", "dead rank":
			return &analysis.AlertRoot{Culprit: f.Culprit, Finding: fmt.Sprintf("%s: %s — %s", f.Kind, f.Culprit, f.Evidence), Rank: f.Rank, Host: f.Host}
		}
	}
	return nil
}
