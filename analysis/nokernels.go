package analysis

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/xfertop/xfertop/timeline"
)

// NoKernelsWhy says why a source's idle time, compute time, overlap and gap causes are unknown.
const NoKernelsWhy = "the source records only communication ops, no kernels: the time between them may be compute"

// RecordsKernels says whether a stream's source can record compute kernels. PyTorch's Flight
// Recorder (the process groups' collectives), NCCL Inspector (a communicator's collectives) and NCCL
// RAS (collective counts) never do, alone or joined by rank ("flight-recorder+nccl-ras"): a
// device there is busy only with what they saw, and the time between their ops is not idle but
// unknown, perhaps compute.
func RecordsKernels(m timeline.Meta) bool {
	if m.Backend == "" {
		return true
	}
	for _, b := range strings.Split(m.Backend, "+") {
		switch b {
		case "flight-recorder", "nccl-inspector", "nccl-ras":
		default:
			return true
		}
	}
	return false
}

// NoOpsWhy says why a source's span, transfers and gaps between ops are unknown.
const NoOpsWhy = "NCCL RAS records no ops, only the communicators' states and collective counts"

// RecordsOps says whether a stream's source records ops at all. NCCL RAS does not: a snapshot of
// its communicators says which ranks answered and how many collectives each ran, never when one
// ran or what moved, so its span, transfers and gaps are unknown, not 0.
func RecordsOps(m timeline.Meta) bool { return m.Backend != "nccl-ras" }

// OpsUnknown says whether r's span, transfers and bytes moved are unknown rather than none: its
// source records no ops (RecordsOps) and none turned up. The report and the console both ask it,
// so that neither shows a 0 the other calls unknown.
func OpsUnknown(r *Result, m timeline.Meta) bool {
	return !RecordsOps(m) && r.Transfers.Count == 0 && r.StreamIdle.TotalNs == 0
}

// markNoKernels marks r's idle and compute figures unknown when its source records no kernels and
// none turned up: each device's idle, compute and overlap shares, the pooled overlap, and the cause
// of every gap (a gap on a communication stream is compute or a late host, and which is not known).
func markNoKernels(r *Result, m timeline.Meta) {
	if RecordsKernels(m) {
		return
	}
	for _, d := range r.Breakdown.Devices {
		if d.ComputeNs > 0 {
			return // kernels after all (a source that gained them): the figures are measured
		}
	}
	r.Breakdown.NoKernels = true
	r.Breakdown.OverlapPct = nil
	for i := range r.Breakdown.Devices {
		d := &r.Breakdown.Devices[i]
		d.NoKernels, d.IdleCause, d.OverlapPct = true, "", nil
	}
	r.StreamIdle.CausesUnknown = true
	r.StreamIdle.TopGaps = slices.Clone(r.StreamIdle.TopGaps) // shared between results: never written
	for i := range r.StreamIdle.TopGaps {
		r.StreamIdle.TopGaps[i].CauseName = ""
	}
	r.StreamIdle.ByCause = nil
	devs := slices.Clone(r.StreamIdle.Devices) // the analysis shares its rows between results: never written
	for i := range devs {
		devs[i].TopCause, devs[i].causesUnknown = "", true
	}
	r.StreamIdle.Devices = devs
	streams := slices.Clone(r.StreamIdle.Streams)
	for i := range streams {
		streams[i].causesUnknown = true
	}
	r.StreamIdle.Streams = streams
}

// CausesUnknown says whether what the stream's gaps waited for is unknown: its source records no
// kernels (ByCause then holds the split a trace's would have, which is not known to be right).
func (s StreamIdle) CausesUnknown() bool { return s.causesUnknown }

// MarshalJSON writes a stream's gaps by cause null where the causes are unknown.
func (s StreamIdle) MarshalJSON() ([]byte, error) {
	type plain StreamIdle // without the method
	if !s.causesUnknown {
		return json.Marshal(plain(s))
	}
	largest := slices.Clone(s.Largest)
	for i := range largest {
		largest[i].CauseName = ""
	}
	return json.Marshal(struct {
		plain
		ByCause *CauseNs `json:"by_cause"`
		Largest []Gap    `json:"largest"`
	}{plain: plain(s), Largest: largest})
}

// MarshalJSON writes a device's gaps by cause and top cause null where the causes are unknown.
func (g DeviceGaps) MarshalJSON() ([]byte, error) {
	type plain DeviceGaps // without the method
	if !g.causesUnknown {
		return json.Marshal(plain(g))
	}
	return json.Marshal(struct {
		plain
		ByCause  *CauseNs `json:"by_cause"`
		TopCause *string  `json:"top_cause"`
	}{plain: plain(g)})
}

// Known says whether the device's idle, compute and non-compute figures are known: it ran
// something, and its source records kernels.
func (d DeviceTime) Known() bool { return d.Ran() && !d.NoKernels }

// marshalNoKernels writes a device of a source without kernels: its span and communication time
// are measured; its busy, idle, compute and non-compute time and overlap are null (unknown).
func (d DeviceTime) marshalNoKernels() ([]byte, error) {
	span, comm, late := d.SpanNs, d.CommNs, d.LateNs
	return json.Marshal(deviceTimeNullable{Device: d.Device, SpanNs: &span, CommNs: &comm, LateNs: &late})
}

// MarshalJSON writes a gap whose cause is unknown (CauseName "") with its cause null.
func (g Gap) MarshalJSON() ([]byte, error) {
	type plain Gap // without the method
	if g.CauseName != "" {
		return json.Marshal(plain(g))
	}
	return json.Marshal(struct {
		Device int32   `json:"device"`
		Stream uint32  `json:"stream"`
		Start  int64   `json:"start_ns"`
		Dur    int64   `json:"dur_ns"`
		Cause  *string `json:"cause"`
	}{g.Device, g.Stream, g.Start, g.Dur, nil})
}
