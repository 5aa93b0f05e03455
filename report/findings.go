package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/analysis/diagnosis"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/units"
)

// Finding is one of the diagnosis's verdicts as the report shows it (analysis/diagnosis).
type Finding struct {
	Kind    string `json:"kind"`    // slow link, slow GPU, slow host, hang, missing rank, mismatch, dead rank, rank error, deadlock
	Culprit string `json:"culprit"` // in words: "host 37 GPU 3 NIC"
	// Rank and Host are the culprit's; null when not known (a link the events cannot place).
	Rank       *int32 `json:"rank"`
	Host       *int32 `json:"host"`
	Link       string `json:"link,omitempty"`        // nic, nvlink, pcie, switch_port; "unknown" for a link not placed
	SwitchPort string `json:"switch_port,omitempty"` // a slow switch port's leaf: "leaf g1.r3" (rail group 1, rail 3)
	// HostName is the culprit's host as a source of the job named it (a rank's plugin, an OTLP
	// sender, NCCL Inspector's hostname or RAS's host joined by rank), as the one host map
	// carries it; null when none did.
	HostName *string `json:"host_name"`
	OnsetNs  int64   `json:"onset_ns"` // when the first evidence was seen, not when the fault began
	// FromFirstTraffic: the first evidence is in the first traffic the culprit carried after
	// setup; the fault may have begun earlier.
	FromFirstTraffic bool    `json:"from_first_traffic"`
	AtNs             int64   `json:"at_ns"`
	Step             int     `json:"step"`
	Confidence       float64 `json:"confidence"`
	SeverityNs       int64   `json:"severity_ns"`
	// Hidden: a degraded link named by its rate while busy, not by what the step lost (its
	// severity_ns is 0); ExposureNs is what it would cost a step were nothing overlapping it.
	Hidden     bool   `json:"hidden,omitempty"`
	ExposureNs *int64 `json:"exposure_ns,omitempty"`
	Evidence   string `json:"evidence"`
	// NextStep is what to do about it (diagnosis.Finding.NextStep): what to check on the culprit,
	// and for a slow link, GPU or host the step time fixing it saves.
	NextStep string `json:"next_step,omitempty"`
	// Hangs: the collective, its sequence number on its communicator, the communicator and the
	// ranks that never entered it.
	Coll     string  `json:"coll,omitempty"`
	Seq      int     `json:"seq,omitempty"`
	Comm     uint32  `json:"comm,omitempty"`
	Missing  []int32 `json:"missing,omitempty"`
	MissingN int     `json:"missing_count,omitempty"`
	// Stuck: the ranks that entered the hung op with all their peers and never finished it.
	Stuck  []int32 `json:"stuck,omitempty"`
	StuckN int     `json:"stuck_count,omitempty"`
	// Entered, Waiting: a sequence-number hang's ranks that entered the op and those of them
	// waiting in it, every one (the evidence summarises them).
	Entered []int32 `json:"entered,omitempty"`
	Waiting []int32 `json:"waiting,omitempty"`
	// Cycle: a deadlock's ranks in wait order (each waits on the next, the last on the first).
	Cycle []int32 `json:"cycle,omitempty"`
}

// findings are the diagnosis's findings as the report shows them (placed on their hosts by the
// one host map, with the names its sources gave those hosts: diagnosis.Finding.Place).
func findings(fs []diagnosis.Finding) []Finding {
	out := make([]Finding, 0, len(fs))
	for i := range fs {
		f := &fs[i]
		x := Finding{Kind: f.Kind.String(), Culprit: f.Culprit(), OnsetNs: f.Onset, FromFirstTraffic: f.FromFirstTraffic, AtNs: f.At, Step: f.Step,
			Confidence: f.Confidence, SeverityNs: f.Severity, Evidence: f.Evidence, Seq: f.Seq, Comm: f.Comm, Missing: f.Missing, MissingN: f.MissingN,
			Stuck: f.Stuck, StuckN: f.StuckN, Entered: f.Entered, Waiting: f.Waiting, Cycle: f.Cycle, NextStep: f.NextStep()}
		if f.Rank >= 0 {
			r := f.Rank
			x.Rank = &r
		}
		if f.Hidden {
			e := f.Exposure
			x.Hidden, x.ExposureNs = true, &e
		}
		if h := f.HostName(); h != "" {
			x.HostName = &h
		}
		if f.Host >= 0 { // the host map's (analysis/hostmap); where it does not place the rank, a host number would be made up
			h := f.Host
			x.Host = &h
		}
		if f.Kind == diagnosis.SlowLink {
			x.Link = map[int]string{timeline.PeakNIC: "nic", timeline.PeakNVLink: "nvlink", timeline.PeakPCIe: "pcie", timeline.LinkFabric: "switch_port"}[f.Link]
			if f.Link == timeline.LinkFabric {
				x.SwitchPort = timeline.PortName(f.Port)
			}
			if x.Link == "" {
				x.Link = "unknown"
			}
		}
		if f.Kind == diagnosis.Hang || f.Kind == diagnosis.MissingRank || f.Kind == diagnosis.Mismatch {
			if f.Coll != 0 {
				x.Coll = f.Coll.String()
			}
		}
		out = append(out, x)
	}
	return out
}

// emulatedRun reports whether the run emulated some of the topology's transfers or collectives
// (--fit with ranks sharing GPUs), where the diagnosis names no slow link, GPU or host.
func emulatedRun(r *Report) bool {
	if r.Links.EmulatedBytes > 0 {
		return true
	}
	for _, s := range r.Transfers.ByKind {
		if s.Emulated > 0 {
			return true
		}
	}
	return slices.ContainsFunc(r.Collectives, func(c analysis.Collective) bool { return c.Emulated })
}

// findingsText writes the findings, worst first, or says there are none.
func findingsText(b *strings.Builder, r *Report) {
	defer func() {
		for _, w := range r.Warnings { // beside the findings, which they qualify
			fmt.Fprintf(b, "  WARNING: %s\n", w)
		}
	}()
	if len(r.Findings) == 0 {
		if emulatedRun(r) {
			b.WriteString("\nFindings: none (no hang; ranks shared GPUs under --fit, so no slow link, GPU or host is named: ranks on one GPU contend for it)\n")
			return
		}
		b.WriteString("\nFindings: none (no rank, GPU, host or link stood out from its peers; no hang)\n")
		return
	}
	fmt.Fprintf(b, "\nFINDINGS (%d, worst first):\n", len(r.Findings))
	for _, f := range r.Findings {
		seen := "first seen at " + units.Dur(f.OnsetNs)
		if f.FromFirstTraffic {
			seen += ", in its first traffic after setup: it may have begun earlier"
		}
		fmt.Fprintf(b, "  %s: %s — %s (%s; found at %s, confidence %.0f%%)\n", f.Kind, f.Culprit, f.Evidence,
			seen, units.Dur(f.AtNs), 100*f.Confidence)
		if f.NextStep != "" {
			fmt.Fprintf(b, "    next: %s\n", f.NextStep)
		}
	}
}
