package flightrecorder

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/xfertop/xfertop/importers/kineto"
	"github.com/xfertop/xfertop/join"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/units"
)

// Options of an import.
type Options struct {
	Context context.Context
	// Progress, when set, is told after each file how many of the files have been read.
	Progress func(done, total int64)
	// MaxFileBytes bounds one dump, which is decoded whole (0: MaxFileBytes).
	MaxFileBytes int64
	// MaxTokenBytes bounds one string or number of a JSON dump (0: DefaultMaxTokenBytes).
	MaxTokenBytes int
}

// untimedStepNs is the spacing of the entries of a dump without times (record id order).
const untimedStepNs = 1000

// ReadFiles imports Flight Recorder dumps (files, or directories of one job's per-rank dumps) as
// one job's events, in start order.
func ReadFiles(paths []string, opts Options) (*kineto.Imported, error) {
	var all []timeline.Event
	im, err := Stream(paths, opts, nil, func(b []timeline.Event) error { all = append(all, b...); return nil })
	if im != nil {
		im.Events = all
	}
	return im, err
}

// Stream imports dumps as ReadFiles does, telling begin what was imported (events aside) before
// handing the events to emit in batches, in start order.
func Stream(paths []string, opts Options, begin func(*kineto.Imported) error, emit func([]timeline.Event) error) (*kineto.Imported, error) {
	files, err := Expand(paths)
	if err != nil {
		return nil, err
	}
	st := &state{pgIdx: map[pgKey]uint32{}, byRank: map[int]string{}}
	sets := newRankSets()
	var unread error // the first dump that could not be read
	var read []*dump
	var readPaths []string
	for i, p := range files {
		if opts.Context != nil && opts.Context.Err() != nil {
			return nil, opts.Context.Err()
		}
		d, err := readFile(p, sets, opts.limits())
		if err != nil {
			// One rank's dump cut short or garbled (its process died while dumping: the hung rank
			// is the likeliest) leaves the others' worth reading: that rank is one without a dump.
			var fe *FormatError
			if !errors.As(err, &fe) {
				return nil, err
			}
			unread = cmp.Or(unread, err)
			st.warn = append(st.warn, fmt.Sprintf("%v; left out (its rank counts as one without a dump)", err))
		} else {
			read, readPaths = append(read, d), append(readPaths, p)
			for _, n := range d.notes {
				st.warn = append(st.warn, fmt.Sprintf("%s (rank %d): %s", p, d.rank, n))
			}
			if d.dropped > 0 {
				st.warn = append(st.warn, fmt.Sprintf("%s (rank %d): %d more entries like these (not listed)", p, d.rank, d.dropped))
			}
		}
		if opts.Progress != nil { // a dump left out was read too: the count reaches the total
			opts.Progress(int64(i+1), int64(len(files)))
		}
	}
	// A dump of another job among the job's (copied into its directory) would split its process
	// groups in two and hide every collective: it is left out, by name, and the rest analysed.
	other := foreign(read)
	for i, d := range read {
		p := readPaths[i]
		if why, ok := other[i]; ok {
			err := &FormatError{File: p, Offset: -1, Reason: why}
			unread = cmp.Or(unread, error(err))
			st.warn = append(st.warn, err.Error())
			continue
		}
		if prev, ok := st.byRank[d.rank]; ok {
			return nil, &FormatError{File: p, Offset: -1, Reason: fmt.Sprintf("rank %d again: %s already is rank %d (two dumps of one rank, or of two jobs)", d.rank, prev, d.rank)}
		}
		st.byRank[d.rank] = p
		st.dumps = append(st.dumps, d)
		st.files = append(st.files, p)
	}
	if len(st.dumps) == 0 && unread != nil {
		return nil, unread
	}
	events, im, err := st.build(strings.Join(paths, ", "))
	if err != nil {
		return im, err
	}
	if begin != nil {
		if err := begin(im); err != nil {
			return im, err
		}
	}
	for len(events) > 0 {
		n := min(len(events), recordings.DefaultBatch)
		if err := emit(events[:n]); err != nil {
			return im, err
		}
		events = events[n:]
	}
	return im, nil
}

type state struct {
	dumps  []*dump
	files  []string
	byRank map[int]string
	pgs    []pgInfo
	pgIdx  map[pgKey]uint32 // name and ranks → communicator (1-based)
	warn   []string
	ends   int // coalesced-group end markers left out
	// dumped counts the entries whose discovered times were the dump's own (not retired), left out
	dumped int
}

type pgInfo struct {
	name, desc string
	ranks      []int // sorted; nil: not known (an entry of a group its rank's pg_config lacks)
}

// pg returns the communicator of process group name as rank d knows it: fr_trace's pg_guid, the
// name and the set of ranks (split groups share a name).
func (st *state) pg(d *dump, name, desc string) (uint32, *pgInfo) {
	c, ok := d.pgs[name]
	var ranks []int
	k := pgKey{name: name}
	if ok {
		if c.set != nil {
			ranks, k.set = c.set.sorted, c.set.id
		}
		if desc == "" {
			desc = c.desc
		}
	}
	if id, ok := st.pgIdx[k]; ok {
		return id, &st.pgs[id-1]
	}
	st.pgs = append(st.pgs, pgInfo{name: name, desc: desc, ranks: ranks})
	id := uint32(len(st.pgs))
	st.pgIdx[k] = id
	return id, &st.pgs[id-1]
}

// pgKey is a process group as the import tells them apart: its name and its set of ranks (0: not
// known).
type pgKey struct {
	name string
	set  int
}

// timed reports whether every dump with entries carries creation times (real dumps do; hand-made
// ones, like PyTorch's analyzer tests', may not). An entry without one among entries with them
// does not make the import untimed: fillTimes places it by its neighbours.
func (st *state) timed() bool {
	for _, d := range st.dumps {
		if len(d.entries) > 0 && !slices.ContainsFunc(d.entries, func(e entry) bool { return e.created > 0 }) {
			return false
		}
	}
	return true
}

// fillTimes gives each entry of a timed import that lacks its creation time the time its
// watchdog saw it start, or else the creation time of the entry before it on its rank (after it,
// for a rank's first), so that it keeps its place in its rank's order; each is warned about,
// naming the rank and the entry, as a time that is unknown.
func (st *state) fillTimes() {
	const most = 20
	n := 0
	for i, d := range st.dumps {
		for j := range d.entries {
			e := &d.entries[j]
			if e.created > 0 {
				continue
			}
			why := "no time_created_ns"
			if e.badCreated != "" {
				why = "time_created_ns " + e.badCreated + " is not a time"
			}
			var at string
			if e.started > 0 {
				e.created, at = e.started, "drawn from when its watchdog saw it start"
			} else if k := neighbour(d.entries, j); k >= 0 {
				e.created, at = d.entries[k].created, fmt.Sprintf("drawn at entry %d's creation time", d.entries[k].index)
			}
			if n++; n <= most {
				st.warn = append(st.warn, fmt.Sprintf("%s (rank %d): entry %d (%s): %s: its time is unknown (%s, not a measurement)", st.files[i], d.rank, e.index, e.profiling, why, at))
			}
		}
	}
	if n > most {
		st.warn = append(st.warn, fmt.Sprintf("%d more entries without a creation time (not listed)", n-most))
	}
}

// neighbour is the index of the entry nearest before j (else after it) that has a creation time;
// −1 when none has.
func neighbour(es []entry, j int) int {
	for k := j - 1; k >= 0; k-- {
		if es[k].created > 0 {
			return k
		}
	}
	for k := j + 1; k < len(es); k++ {
		if es[k].created > 0 {
			return k
		}
	}
	return -1
}

// build makes every rank's events and passes them through a join.Join.
func (st *state) build(source string) ([]timeline.Event, *kineto.Imported, error) {
	timed := st.timed()
	if timed {
		st.fillTimes()
	}
	first := make([]int64, len(st.dumps))
	var epoch int64
	for i, d := range st.dumps {
		for j := range d.entries {
			if c := d.entries[j].created; timed && (first[i] == 0 || c < first[i]) {
				first[i] = c
			}
		}
		if first[i] != 0 && (epoch == 0 || first[i] < epoch) {
			epoch = first[i]
		}
	}
	j := join.New(join.Config{Epoch: epoch})
	strs := j.Strings()
	var events []timeline.Event
	devs := 0
	for i, d := range st.dumps {
		mb, err := j.Add(st.files[i], &recordings.Meta{EpochUnixNs: first[i], Extra: map[string]string{"nccl.rank": strconv.Itoa(d.rank)}})
		if err != nil {
			return nil, nil, err
		}
		devs = max(devs, d.rank+1)
		start := len(events)
		events = st.rankEvents(d, first[i], timed, strs, events)
		for k := start; k < len(events); k++ {
			label := events[k].Label // already the session's: the join maps a member's own table
			j.Event(mb, &events[k])
			events[k].Label = label
		}
	}
	events = st.unrecorded(strs, events)
	slices.SortStableFunc(events, func(a, b timeline.Event) int { return cmp.Compare(a.Start, b.Start) })
	st.checks(timed)
	im := &kineto.Imported{Strings: strs, Source: source, Format: Format, Devices: max(devs, j.Devices()), EpochUnixNs: epoch,
		Extra: st.extra(), Warnings: st.warn}
	for i := range st.pgs {
		im.World = max(im.World, len(st.pgs[i].ranks))
	}
	return events, im, nil
}

// rankEvents appends one rank's events: a mark per process group it is a member of (the
// diagnosis learns the group's members from it), then an op per entry.
func (st *state) rankEvents(d *dump, first int64, timed bool, strs *timeline.Strings, out []timeline.Event) []timeline.Event {
	rank := int32(d.rank)
	for _, n := range d.pgNames() {
		pc := d.pgs[n]
		if pc.set == nil || !pc.set.has(d.rank) {
			continue
		}
		comm, pg := st.pg(d, n, pc.desc)
		out = append(out, timeline.Event{Kind: timeline.KindMark, Device: rank, Peer: timeline.NoDevice, Queued: -1, Comm: comm,
			Ranks: uint16(min(len(pg.ranks), 1<<16-1)), Op: timeline.SeqOp(comm, 0), Aux: timeline.AuxSeqOp, Label: strs.ID(pgLabel(pg))})
	}
	var last int64 // the last time this rank's dump knows of: when its unfinished ops were seen unfinished
	for i := range d.entries {
		e := &d.entries[i]
		last = max(last, e.created, e.started, e.completed, e.dumped)
		if e.dumped > 0 {
			st.dumped++
		}
	}
	// A ring that overwrote its oldest entries (its first record id is not 0) lost sends and
	// receives, so its per-pair counts do not start at the pair's first op: they are left unknown.
	wrapped := len(d.entries) > 0 && d.entries[0].record > 0
	coalescedStates(d.entries)
	pairs := map[pairKey]uint64{}
	for i := range d.entries {
		e := &d.entries[i]
		ev, ok := st.event(d, e, timed, last, strs)
		if !ok {
			continue
		}
		if ev.Kind == timeline.KindSend || ev.Kind == timeline.KindRecv {
			var ord uint64
			if k := (pairKey{ev.Comm, ev.Peer, ev.Kind}); !wrapped && ev.Peer != timeline.NoDevice {
				pairs[k]++
				ord = pairs[k]
			}
			ev.Op = timeline.SeqOp(ev.Comm, timeline.P2PSeq(ord, uint64(e.p2pSeq)))
		}
		if timed {
			ev.Start -= first
			ev.End -= first
			if ev.Queued > 0 {
				ev.Queued -= first
			}
		}
		out = append(out, ev)
	}
	return out
}

// unrecorded appends a membership mark (timeline.StatusNoRecord) for each member of a process
// group whose dump is missing or could not be read: the diagnosis names such a rank when it is the
// one member not seen in a collective the others entered.
func (st *state) unrecorded(strs *timeline.Strings, out []timeline.Event) []timeline.Event {
	for i := range st.pgs {
		pg := &st.pgs[i]
		for _, r := range pg.ranks {
			if _, ok := st.byRank[r]; ok || r < 0 || r > 1<<30 {
				continue
			}
			comm := uint32(i + 1)
			out = append(out, timeline.Event{Kind: timeline.KindMark, Device: timeline.NoDevice, Peer: int32(r), Queued: -1, Comm: comm,
				Ranks: uint16(min(len(pg.ranks), 1<<16-1)), Op: timeline.SeqOp(comm, 0), Aux: timeline.AuxSeqOp, Status: timeline.StatusNoRecord,
				Label: strs.ID(pgLabel(pg))})
		}
	}
	return out
}

// pairKey is one direction of one pair of ranks on one process group, as one of them sees it:
// its sends to peer, or its receives from peer.
type pairKey struct {
	comm uint32
	peer int32
	kind timeline.Kind
}

func pgLabel(pg *pgInfo) string {
	if pg.desc == "" || pg.desc == "undefined" {
		return "process group " + pg.name
	}
	return fmt.Sprintf("process group %s (%s)", pg.name, pg.desc)
}

// event turns one entry into an op; false for a coalesced group's end marker (its ops are the
// group's entries before it).
func (st *state) event(d *dump, e *entry, timed bool, last int64, strs *timeline.Strings) (timeline.Event, bool) {
	comm, pg := st.pg(d, e.pgName, e.pgDesc)
	name := e.profiling
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[i+1:]
	}
	typ, meta, _ := strings.Cut(name, " ")
	if isGroupEnd(typ) {
		st.ends++
		return timeline.Event{}, false
	}
	ev := timeline.Event{Device: int32(d.rank), Peer: timeline.NoDevice, Comm: comm, Stream: comm, Queued: -1, Aux: timeline.AuxSeqOp,
		Ranks: uint16(min(len(pg.ranks), 1<<16-1)), Bytes: max(tensorBytes(e.inSizes, e.inTypes), tensorBytes(e.outSizes, e.outTypes))}
	switch typ {
	case "send", "recv":
		ev.Kind = timeline.KindSend
		if typ == "recv" {
			ev.Kind = timeline.KindRecv
		}
		ev.Op = timeline.SeqOp(comm, timeline.P2PSeq(0, uint64(e.p2pSeq))) // the pair's count is set by rankEvents
		ev.Peer = p2pPeer(typ, meta, pg.ranks)
	default:
		ev.Kind = timeline.KindCollective
		ev.Sub = uint8(collOp(typ))
		ev.Op = timeline.SeqOp(comm, uint64(e.collSeq))
	}
	label := e.profiling
	if e.state != "completed" {
		ev.Status = timeline.StatusPending
		label += " (" + e.state + ")"
	}
	ev.Label = strs.ID(label)
	if !timed {
		ev.Start = e.record * untimedStepNs
		ev.End = ev.Start
		if e.durMs >= 0 {
			ev.End += int64(e.durMs * 1e6)
		} else if e.state == "completed" {
			ev.Aux |= timeline.AuxTimeUnknown // no clock and no duration: not an op of 0 s
		}
		return ev, true
	}
	ev.Queued = e.created
	ev.Start = e.created
	if e.started > 0 {
		ev.Start = max(e.started, e.created)
	}
	switch {
	case e.state != "completed":
		ev.End = max(ev.Start, last)
	case e.completed > 0 && e.durMs >= 0:
		ev.End = max(e.completed, e.created)
		ev.Start = max(e.created, ev.End-int64(e.durMs*1e6))
	case e.completed > 0:
		ev.End = max(e.completed, ev.Start)
	case e.durMs >= 0:
		ev.End = ev.Start + int64(e.durMs*1e6)
	default:
		// Completed, but neither a completion its watchdog saw nor a duration: an entry it had not
		// retired (its discovered times were the dump's and are left out), on a job without
		// TORCH_NCCL_ENABLE_TIMING. When it ran and how long it took are unknown, not 0 s.
		ev.End = ev.Start
		ev.Aux |= timeline.AuxTimeUnknown
	}
	return ev, true
}

// opType is an entry's op as torch names it, without the backend and the peers ("nccl:send 0->1":
// "send").
func opType(profiling string) string {
	if i := strings.IndexByte(profiling, ':'); i >= 0 {
		profiling = profiling[i+1:]
	}
	typ, _, _ := strings.Cut(profiling, " ")
	return typ
}

// isGroupEnd reports whether an op type is a coalesced group's end marker: "coalesced", or
// "ALLREDUCE_coalesced" and the like (the collective in capitals).
func isGroupEnd(typ string) bool {
	return typ == "coalesced" || (strings.HasSuffix(typ, "_coalesced") && strings.ToUpper(typ) == strings.TrimSuffix(typ, "_coalesced")+"_COALESCED")
}

// coalescedStates gives the ops of each coalesced group the state and times of the group's end
// marker when they have not moved past "scheduled" themselves. torch tracks a coalesced group
// (batch_isend_irecv, a coalesced collective) by one work item, the marker's: its ops' own
// entries stay "scheduled" with no times, completed or not (seen in real dumps, torch 2.11: a
// healthy job's every batch_isend_irecv send and receive "scheduled", their marker "completed").
// A group's ops are the entries right before its marker on the same process group with its
// sequence numbers (collective_seq_id and p2p_seq_id).
func coalescedStates(es []entry) {
	for m := range es {
		end := &es[m]
		if !isGroupEnd(opType(end.profiling)) || end.state == "scheduled" {
			continue
		}
		for k := m - 1; k >= 0; k-- {
			e := &es[k]
			if e.pgName != end.pgName || e.collSeq != end.collSeq || e.p2pSeq != end.p2pSeq || isGroupEnd(opType(e.profiling)) {
				break
			}
			if e.state != "scheduled" {
				continue
			}
			e.state, e.started, e.completed, e.durMs = end.state, end.started, end.completed, end.durMs
		}
	}
}

// p2pPeer reads a send's or receive's peer from its name ("send 0->1": group rank 0 sends to
// 1; "recv 1<-0") and turns it into a job rank through the group's ranks.
func p2pPeer(typ, meta string, ranks []int) int32 {
	var b string
	var ok bool
	if typ == "send" {
		_, b, ok = strings.Cut(meta, "->")
	} else {
		_, b, ok = strings.Cut(meta, "<-")
	}
	if !ok {
		return timeline.NoDevice
	}
	n, err := strconv.Atoi(strings.TrimSpace(b))
	if err != nil || n < 0 {
		return timeline.NoDevice
	}
	if len(ranks) == 0 {
		return int32(min(n, 1<<30))
	}
	if n >= len(ranks) {
		return timeline.NoDevice
	}
	return int32(ranks[n])
}

// collOp names a Flight Recorder collective as xfertop does; 0 for the ones it has no name for
// (gather, scatter, barrier), whose label keeps torch's name.
func collOp(typ string) timeline.CollOp {
	t := strings.TrimLeft(strings.ToLower(typ), "_")
	for changed := true; changed; {
		changed = false
		for _, suf := range []string{"_coalesced", "_base", "_oop", "_single", "_v", "_into_tensor", "_tensor"} {
			if strings.HasSuffix(t, suf) {
				t, changed = strings.TrimSuffix(t, suf), true
			}
		}
	}
	if op, ok := timeline.ParseCollOp(t); ok && op != timeline.CollSendRecv {
		return op
	}
	return 0
}

// checks adds the import's warnings: what is approximate, what is missing.
func (st *state) checks(timed bool) {
	if !timed {
		st.warn = append(st.warn, "the dumps carry no creation times (time_created_ns): ops are laid out in record order, 1 µs apart, and their times are not measurements")
	} else {
		st.warn = append(st.warn, "op times are when the recording process created them and when its watchdog saw them start and complete (later than the GPU did); duration_ms, where the dump has it (TORCH_NCCL_ENABLE_TIMING), is the GPU's")
	}
	versions := map[string]bool{}
	for _, d := range st.dumps {
		versions[d.version] = true
	}
	if len(versions) > 1 {
		vs := make([]string, 0, len(versions))
		for v := range versions {
			vs = append(vs, strconv.Quote(v))
		}
		sort.Strings(vs)
		st.warn = append(st.warn, "the dumps are of different format versions ("+strings.Join(vs, ", ")+"): of different torch builds, or of different jobs")
	}
	for _, pg := range st.pgs {
		var missing []string
		for _, r := range pg.ranks {
			if _, ok := st.byRank[r]; !ok {
				missing = append(missing, strconv.Itoa(r))
			}
		}
		if n := len(missing); n > 0 {
			const most = 16
			more := ""
			if len(missing) > most {
				more = fmt.Sprintf(" … (%d in all)", len(missing))
				missing = missing[:most]
			}
			st.warn = append(st.warn, fmt.Sprintf("%s: no dump of %s %s%s: what %s did is unknown", pgLabel(&pg), units.Plural(n, "rank"), strings.Join(missing, ","), more, units.Plural(n, "it", "they")))
		}
	}
	if st.ends > 0 {
		st.warn = append(st.warn, fmt.Sprintf("%d coalesced-group end markers left out (the group's ops are its entries)", st.ends))
	}
	if st.dumped > 0 {
		st.warn = append(st.warn, fmt.Sprintf("%s its watchdog had not retired when dumped: their time_discovered_* are when the dump was taken, "+
			"not when the op started or completed, and are left out (each op starts at its creation and lasts duration_ms where the dump has it, else its time is unknown)",
			units.Counted(st.dumped, "entry", "entries")))
	}
}

// extra describes the import for the report's meta: each process group as a communicator.
func (st *state) extra() map[string]string {
	x := map[string]string{}
	for i := range st.pgs {
		pg := &st.pgs[i]
		n := "unknown"
		if pg.ranks != nil {
			n = strconv.Itoa(len(pg.ranks))
		}
		x[fmt.Sprintf("comm.%d", i+1)] = fmt.Sprintf("%s, %s ranks (Flight Recorder)", pgLabel(pg), n)
	}
	versions := map[string]bool{}
	for _, d := range st.dumps {
		versions[d.version] = true
	}
	vs := make([]string, 0, len(versions))
	for v := range versions {
		vs = append(vs, v)
	}
	sort.Strings(vs)
	x["flight_recorder.versions"] = strings.Join(vs, ", ")
	return x
}
