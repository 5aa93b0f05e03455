package join

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/xfertop/xfertop/timeline"
)

// Part is one format's import of one job (its Flight Recorder dumps, its NCCL Inspector logs),
// for Parts to join with the job's others.
type Part struct {
	// Format names it in messages ("Flight Recorder", "NCCL Inspector"); Files its inputs.
	Format, Files string
	Strings       *timeline.Strings
	// Events are in start order, their times relative to EpochUnixNs (Unix ns, on the recording
	// hosts' wall clocks).
	Events      []timeline.Event
	EpochUnixNs int64
	// World is the job's size as the part knows it, 0 when it does not; JobID its job's id, ""
	// when it has none.
	World int
	JobID string
	// Ranked says the events' devices are the job's global ranks; a part numbered otherwise (NCCL
	// Inspector without a communicator spanning every process: by host and pid) is joined by
	// those numbers with a warning.
	Ranked bool
	// Measures says its completed ops are the job's measurements on the ranks it has: another
	// part's completed ops on those ranks become timeline.StatusShadow.
	Measures bool
	// Hosts names the host of each rank the part knows it of.
	Hosts map[int32]string
	// Extra describes the part (timeline.Meta.Extra); its "comm.N" keys are renumbered as its
	// communicators are.
	Extra    map[string]string
	Warnings []string
}

// Joined is the one stream Parts makes of a job's parts.
type Joined struct {
	Events      []timeline.Event
	Strings     *timeline.Strings
	EpochUnixNs int64
	Devices     int
	Extra       map[string]string
	Warnings    []string
}

// MismatchError is two parts that cannot be of one job: their sizes or job ids differ.
type MismatchError struct {
	What             string // "job size", "job id"
	A, B             string // the parts' files
	AFormat, BFormat string
	AValue, BValue   string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("%s (%s) and %s (%s) are not of one job: their %s differs (%s, %s); give the sources of one job",
		e.A, e.AFormat, e.B, e.BFormat, e.What, e.AValue, e.BValue)
}

// maxHostConflicts bounds the ranks a warning names whose hosts the parts name differently.
const maxHostConflicts = 8

// partStreams is where a later part's streams begin within each rank's block of StreamsPerRank:
// a part's own are below it, so two parts' streams of one rank never share an id.
const partStreams = StreamsPerRank / 2

// Parts joins one job's parts, read in different formats, by rank: a device is the job's global
// rank in every part. Each part's clock is its hosts' wall clock, as its source recorded it, and
// the session's time 0 is the earliest part's first time; the parts' clocks are not aligned
// further, so no op is measured across them: a collective's instance is made of one part's
// ranks (each part's op ids are its own). Communicators, streams and labels are renumbered
// into one session; host names are joined by rank and handed to the host map (PlaceHosts). Parts whose sizes or job ids differ are a
// *MismatchError naming both.
func Parts(parts []Part) (*Joined, error) {
	out := &Joined{Strings: timeline.NewStrings(), Extra: map[string]string{}}
	if err := sameJob(parts); err != nil {
		return nil, err
	}
	for _, p := range parts {
		if p.EpochUnixNs != 0 && (out.EpochUnixNs == 0 || p.EpochUnixNs < out.EpochUnixNs) {
			out.EpochUnixNs = p.EpochUnixNs
		}
	}
	measured := map[int32]string{} // rank → the part that measures its ops
	hosts := map[int32]string{}
	hostFrom := map[int32]*Part{} // the part that named each rank's host
	var conflicts []string
	for i := range parts {
		p := &parts[i]
		for _, r := range slices.Sorted(maps.Keys(p.Hosts)) {
			h := p.Hosts[r]
			if old, ok := hosts[r]; ok && h != "" && h != old {
				// Inspector's hostname and RAS's host may name one machine differently (a name,
				// an address): the first part's is kept, and the difference said.
				conflicts = append(conflicts, fmt.Sprintf("rank %d: %s (%s), %s (%s)", r, old, hostFrom[r].Files, h, p.Files))
			} else if !ok && h != "" {
				hosts[r], hostFrom[r] = h, p
			}
		}
		if !p.Measures {
			continue
		}
		for i := range p.Events {
			if e := &p.Events[i]; measures(e) {
				if _, ok := measured[e.Device]; !ok {
					measured[e.Device] = p.Format
				}
			}
		}
	}
	var comms uint32
	shadowed := 0
	var names []string
	for i := range parts {
		p := &parts[i]
		names = append(names, fmt.Sprintf("%s (%s)", p.Format, p.Files))
		top, n := out.add(p, comms, i > 0, func(e *timeline.Event) {
			if m, ok := measured[e.Device]; ok && m != p.Format && measures(e) {
				e.Status = timeline.StatusShadow
			}
		})
		shadowed += n
		for k, v := range p.Extra {
			if n, ok := strings.CutPrefix(k, "comm."); ok {
				if c, err := strconv.Atoi(n); err == nil {
					k = "comm." + strconv.Itoa(c+int(comms))
				}
			}
			out.Extra[k] = v
		}
		out.Warnings = append(out.Warnings, p.Warnings...)
		if !p.Ranked {
			out.Warnings = append(out.Warnings, fmt.Sprintf("%s numbers its processes by host and pid, not by the job's rank (none of its communicators spans every process): "+
				"joined with the others by those numbers, which may not be the same ranks", p.Files))
		}
		comms += top
	}
	slices.SortStableFunc(out.Events, func(a, b timeline.Event) int { return cmp.Compare(a.Start, b.Start) })
	if w := PlaceHosts(out.Events, hosts, out.Extra); w != "" {
		out.Warnings = append(out.Warnings, w)
	}
	out.Extra["join.parts"] = strings.Join(names, "; ")
	out.Extra["join.clocks"] = "each part on its hosts' wall clock as recorded; not aligned further: no op is measured across parts"
	out.Warnings = append(out.Warnings, "joined by rank: "+strings.Join(names, " and ")+
		"; their times are each on the recording hosts' wall clocks, not aligned further, so no duration is taken across them")
	if n := len(conflicts); n > 0 {
		more := ""
		if n > maxHostConflicts {
			more = fmt.Sprintf("; %d more", n-maxHostConflicts)
			conflicts = conflicts[:maxHostConflicts]
		}
		which := fmt.Sprintf("the hosts of %d ranks", n)
		if n == 1 {
			which = "the host of 1 rank"
		}
		out.Warnings = append(out.Warnings, fmt.Sprintf("the parts name %s differently (the first named is kept): %s%s",
			which, strings.Join(conflicts, "; "), more))
	}
	if shadowed > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d completed ops of ranks another part measured are kept for the diagnosis's sequence matching only (%s's measurements count, once)",
			shadowed, measuredBy(measured)))
	}
	return out, nil
}

// measures says whether e is an op a measuring part's counts replace another's: a completed
// collective, send or receive of a rank.
func measures(e *timeline.Event) bool {
	return e.Device >= 0 && e.Status == timeline.StatusOK &&
		(e.Kind == timeline.KindCollective || e.Kind == timeline.KindSend || e.Kind == timeline.KindRecv)
}

// measuredBy names the parts that measure ranks.
func measuredBy(m map[int32]string) string {
	set := map[string]bool{}
	for _, f := range m {
		set[f] = true
	}
	return strings.Join(slices.Sorted(maps.Keys(set)), ", ")
}

// partStream moves a later part's stream into the upper half of its rank's block (or leaves a
// spare id, outside the scheme, as it is).
func partStream(s uint32) uint32 {
	if s >= firstSpareStream || s%StreamsPerRank >= partStreams {
		return s
	}
	return s + partStreams
}

// sameJob refuses parts whose job sizes or ids differ, naming both.
func sameJob(parts []Part) error {
	for i := range parts {
		for k := i + 1; k < len(parts); k++ {
			a, b := &parts[i], &parts[k]
			if a.World > 0 && b.World > 0 && a.World != b.World {
				return &MismatchError{What: "job size", A: a.Files, B: b.Files, AFormat: a.Format, BFormat: b.Format,
					AValue: strconv.Itoa(a.World) + " ranks", BValue: strconv.Itoa(b.World) + " ranks"}
			}
			if a.JobID != "" && b.JobID != "" && a.JobID != b.JobID {
				return &MismatchError{What: "job id", A: a.Files, B: b.Files, AFormat: a.Format, BFormat: b.Format, AValue: a.JobID, BValue: b.JobID}
			}
		}
	}
	return nil
}

// add appends part p's events to the session's: on the session's clock, labels in its table, its
// communicators after the comms of the parts before it (a sequence number's op id with them), a
// later part's streams moved off the earlier ones', each event then given its host and status by
// place. It returns the part's highest communicator and how many of its ops place made shadows.
func (out *Joined) add(p *Part, comms uint32, later bool, place func(*timeline.Event)) (top uint32, shadowed int) {
	offset := p.EpochUnixNs - out.EpochUnixNs
	labels := map[uint32]uint32{}
	for i := range p.Events {
		e := p.Events[i]
		e.Start += offset
		e.End += offset
		if e.Queued >= 0 {
			e.Queued += offset
		}
		if e.Label != 0 {
			id, ok := labels[e.Label]
			if !ok {
				id = out.Strings.ID(p.Strings.Lookup(e.Label))
				labels[e.Label] = id
			}
			e.Label = id
		}
		if e.Comm != 0 {
			top = max(top, e.Comm)
			e.Comm += comms
			if seq, ok := e.OpSeq(); ok {
				e.Op = timeline.SeqOp(e.Comm, seq)
			}
		}
		if e.Stream != 0 && later {
			e.Stream = partStream(e.Stream)
		}
		if e.Device >= 0 {
			out.Devices = max(out.Devices, int(e.Device)+1)
		}
		place(&e)
		if e.Status == timeline.StatusShadow && p.Events[i].Status != timeline.StatusShadow {
			shadowed++
		}
		out.Events = append(out.Events, e)
	}
	return top, shadowed
}
