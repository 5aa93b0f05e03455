// Package diagnosis turns a run's event stream into findings: which rank, GPU, host or link is
// slowing or hanging the job, of what kind, since when, with the evidence in numbers. It is a
// streaming fold like the analysis accumulators (Add each event, read Result), with state bounded
// per rank, and needs no training data: every rank is compared with its peers at the same step
// (ranks that launched the same work that step, or that ran the same kernel or moved the same
// collective), by their median and median absolute deviation, so what is normal for this job at
// this step is whatever most ranks did. Hangs are named by the collective (op, sequence number on
// its communicator, communicator) and the ranks that never entered it, from what is in flight
// (Pending), before the watchdog ends the run; the watchdog's alerts become findings too.
package diagnosis

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/xfertop/xfertop/analysis/hostmap"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/units"
)

// Kind is what a finding says is wrong.
type Kind uint8

// Finding kinds.
const (
	SlowLink    Kind = iota + 1 // a NIC, NVLink port or PCIe link moves less than its peers'
	SlowGPU                     // a GPU's kernels take longer than the same kernels on its peers
	SlowHost                    // a host launches its work later than its peers (CPU contention)
	Hang                        // a collective some ranks never entered
	MissingRank                 // a rank that never joined its communicator, or stopped answering
	Mismatch                    // ranks entered one collective (by sequence number) with different ops or sizes
	DeadRank                    // a rank its peers consider dead (NCCL RAS: no keep-alive)
	RankError                   // a rank reporting an error, an abort or a failed init (NCCL RAS)
	Deadlock                    // ranks waiting on each other in a cycle
)

var kindNames = [...]string{SlowLink: "slow link", SlowGPU: "slow GPU", SlowHost: "slow host", Hang: "hang", MissingRank: "missing rank",
	Mismatch: "mismatch", DeadRank: "dead rank", RankError: "rank error", Deadlock: "deadlock"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "unknown"
}

// Finding is one verdict.
type Finding struct {
	Kind Kind
	// Rank is the culprit device (global id); Host its host. Link is the link class
	// (timeline.PeakNIC, PeakNVLink, PeakPCIe, or LinkFabric for a leaf switch's ports to the
	// spines, named by Port) of a slow link, -1 otherwise.
	Rank int32
	Host int32 // -1: unknown (the host map, analysis/hostmap, does not place the rank)
	Link int
	// gpu is the culprit rank's GPU on its host + 1, as the host map placed it (Place); 0 when
	// unknown (a rank that named its host says nothing of which of its GPUs it drives, and a
	// finding no map placed has none).
	gpu int32
	// Port is the leaf switch (timeline.PackPort) of a slow link of class timeline.LinkFabric.
	Port uint32
	// Onset is when the first evidence of the fault was seen (not when the fault began): in the first step that showed it, its
	// first slow kernel or the first link window it was slow in, else the culprit's first op in
	// that step (or a hang's wait's start); At is the stream time
	// at which the evidence crossed the threshold, and Step the step then (0: none seen).
	Onset, At int64
	Step      int
	// FromFirstTraffic says the first evidence is in the first step compared, the first traffic
	// the culprit carried after the communicators' setup: no evidence can come earlier, so the
	// fault may have begun before Onset (a NIC slow from 0 s shows at the first collective).
	FromFirstTraffic bool
	// Confidence is in (0, 1]: how far the culprit stands from the next suspect.
	Confidence float64
	// Severity is the step time it costs per step (ns), in the last step it was seen in (as its
	// Evidence): for a slow link, GPU or host the step's
	// growth over the shortest step before it, no more than what its transfers, launches or
	// kernels lost (CostKnown), else that lost time capped at the step; for a hang, missing rank
	// or deadlock the time its ranks have waited in it, summed over them (rank-time).
	Severity int64
	// CostKnown says Severity was measured against a step before the culprit was first seen.
	CostKnown bool
	// CostBound says Severity is an upper bound of the step time it costs: the only step before
	// it was a first step whose work is known only from the end of its communicators' setup,
	// less than a whole step's, and the step's growth over that bounds the cost.
	CostBound bool
	// Flaps: a slow link that went down and came back up at its peers' rate (a flapping port).
	Flaps bool
	// Hidden: a degraded link named by its rate while busy against what the link gives (its line
	// rate, or its own earlier steps'), not by what the step lost: its Severity is 0, as nothing
	// the step waited on is claimed, and Exposure is what it would cost the step (ns) were
	// nothing overlapping its transfers.
	Hidden   bool
	Exposure int64
	// Evidence says it in numbers.
	Evidence string
	// Hangs: the collective, its sequence number on its communicator, the communicator and the
	// ranks that never entered it (Missing holds up to 16; MissingN counts them all).
	Coll     timeline.CollOp
	Seq      int
	Comm     uint32
	Missing  []int32
	MissingN int
	// Stuck are the ranks that entered the hung op with all their peers and never finished it
	// (up to 16; StuckN counts them all), as distinct from those that never entered it.
	Stuck  []int32
	StuckN int
	// Entered and Waiting are a sequence-number hang's ranks that entered the op and those of
	// them waiting in it, every one, in order (the evidence writes them as a count and runs).
	Entered, Waiting []int32
	// Cycle is a deadlock's ranks in wait order: each waits on the next, the last on the first.
	Cycle []int32

	// hostName is the culprit host's name where a source of the job named it (Place), "" where
	// none did: Culprit shows it in place of the host's number.
	hostName string

	// behind is a source's count mismatch's (NCCL RAS): how many collectives of Coll its rank is
	// behind the highest count (0: not known), for mergeSourced.
	behind int64
	// look: made by a look at what was in flight (Pending), from how long its op had lasted, so
	// taken back if that op completes after all (withdrawn): it was a long wait, not a hang.
	look, withdrawn bool
}

// Place puts the finding's culprit rank on its host and GPU as hosts, the analysis's one host
// map, has them (unknown where it does not place the rank). A finding of a host alone (a whole
// host slow, ranks stuck on one host) keeps the host it names.
func (f *Finding) Place(hosts *hostmap.Map) {
	f.gpu = 0
	if f.Rank >= 0 {
		f.Host = hosts.HostOr(f.Rank)
		if l, ok := hosts.Local(f.Rank); ok {
			f.gpu = l + 1
		}
	}
	f.hostName, _ = hosts.Name(f.Host)
}

// host is the culprit's host as findings write it: its name where a source named it (Place),
// else its number.
func (f *Finding) host() string {
	if f.hostName != "" {
		return f.hostName
	}
	return strconv.Itoa(int(f.Host))
}

// Local is the culprit rank's GPU on its host, and whether it is known (Place).
func (f *Finding) Local() (int32, bool) { return f.gpu - 1, f.gpu > 0 }

// Culprit names the finding's culprit: "host 37 GPU 3 NIC", "rank 12 (host 1 GPU 4)". Its host
// and GPU are the host map's (analysis/hostmap: the topology's, the hosts the ranks named, or
// --gpus-per-host), as every consumer has them: a rank whose host is unknown is named alone, never
// placed on a host that was not measured.
func (f *Finding) Culprit() string {
	if f.Kind == SlowLink && f.Link == timeline.LinkFabric {
		return timeline.PortName(f.Port) + " spine ports"
	}
	if f.Rank < 0 {
		if f.Kind == SlowLink && f.Host >= 0 {
			return fmt.Sprintf("host %s %s (which GPU's: unknown)", f.host(), linkName(f.Link))
		}
		if f.Kind == SlowLink {
			return fmt.Sprintf("a %s (which: unknown)", linkName(f.Link))
		}
		if f.Kind == SlowHost && f.Host >= 0 {
			return fmt.Sprintf("host %s (all its ranks alike: a host-wide cause)", f.host())
		}
		if f.Kind == Hang && f.StuckN > 0 {
			// Short, for a table's column: the evidence lists them.
			where := ""
			if f.Host >= 0 {
				where = fmt.Sprintf(", host %s", f.host())
			}
			return fmt.Sprintf("%s stuck inside (%s%s; which holds it: unknown)", units.Counted(f.StuckN, "rank"), rankSpan(f.Stuck, f.StuckN), where)
		}
		return "unknown"
	}
	if f.Kind == Deadlock && len(f.Cycle) > 0 {
		return "ranks " + cycleString(f.Cycle)
	}
	if f.Host < 0 {
		// The source does not say which ranks share a host: name the rank alone.
		switch f.Kind {
		case SlowLink:
			return fmt.Sprintf("rank %d %s", f.Rank, linkName(f.Link))
		case SlowHost:
			return fmt.Sprintf("rank %d's host", f.Rank)
		}
		return fmt.Sprintf("rank %d", f.Rank)
	}
	local, ok := f.Local()
	switch {
	case f.Kind == SlowLink && ok:
		return fmt.Sprintf("host %s GPU %d %s", f.host(), local, linkName(f.Link))
	case f.Kind == SlowLink:
		return fmt.Sprintf("rank %d %s (host %s)", f.Rank, linkName(f.Link), f.host())
	case f.Kind == SlowHost:
		return fmt.Sprintf("host %s (rank %d)", f.host(), f.Rank)
	case ok:
		return fmt.Sprintf("rank %d (host %s GPU %d)", f.Rank, f.host(), local)
	}
	return fmt.Sprintf("rank %d (host %s)", f.Rank, f.host())
}

func linkName(l int) string {
	switch l {
	case timeline.PeakNIC:
		return "NIC"
	case timeline.PeakNVLink:
		return "NVLink"
	case timeline.PeakPCIe:
		return "PCIe"
	case timeline.LinkFabric:
		return "switch port"
	}
	return "link"
}

// String is the finding on one line.
func (f *Finding) String() string {
	return fmt.Sprintf("%s: %s — %s", f.Kind, f.Culprit(), f.Evidence)
}

// HostName is the culprit's host as a source of the job named it, as the host map carries the
// name (Place); "" when none did.
func (f *Finding) HostName() string { return f.hostName }

// sortFindings orders findings worst first: hangs and missing ranks, then by time lost.
func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		hi, hj := fs[i].Kind >= Hang, fs[j].Kind >= Hang
		if hi != hj {
			return hi
		}
		return fs[i].Severity > fs[j].Severity
	})
}

// rankSpan writes ranks as a span when they are consecutive and all listed ("16–23"), else as
// rankList does.
func rankSpan(rs []int32, n int) string {
	if len(rs) > 1 && len(rs) == n && int(rs[len(rs)-1]-rs[0]) == len(rs)-1 {
		return fmt.Sprintf("%d–%d", rs[0], rs[len(rs)-1])
	}
	return rankList(rs, n)
}
