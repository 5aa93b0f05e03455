package analysis

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/xfertop/xfertop/timeline"
)

// collInst is one collective instance: its ranks' parts, grouped by op id.
type collInst struct {
	op         timeline.CollOp
	ranks      int
	start, end int64
	sum        int64 // bytes over the parts seen
	n          int
	algo       timeline.NCCLAlgo
	proto      timeline.NCCLProto
	channels   int
	comm       uint32        // the communicator, for the ranks of it that left no record
	arrivals   []collArrival // each rank's start, for its straggler
	emulated   bool          // some rank's part stood in for the topology's (timeline.AuxEmulated)
	// timeUnknown: some rank's part is of unknown time (timeline.AuxTimeUnknown), so the
	// instance's end, and its time, are unknown.
	timeUnknown bool
}

// collArrival is when a rank's part of a collective started: when the rank arrived at it.
type collArrival struct {
	rank  int32
	start int64
}

type collKey struct {
	op       timeline.CollOp
	ranks    int
	class    int64
	algo     timeline.NCCLAlgo
	proto    timeline.NCCLProto
	emulated bool // emulated instances are rows of their own: their time is no rate of the topology
}

type collStats struct {
	count, bytes, timeNs int64
	unknownTime          int64 // instances of unknown time: counted, in no time figure
	timedBytes           int64 // bytes of the instances whose time is known: the rate's
	lat                  Quantiles
	channels             int // the most any instance ran with
}

// collectives groups each collective's rank parts into one instance (same op id; complete when
// every rank has reported, or at once when the rank count is unknown) and folds instances by
// (op, ranks, size class). An instance's time is its last rank's end − its first rank's start; its
// straggler is the rank that started measurably last, late by its start − the median start (as at
// barriers: none when the ranks started together).
type collectives struct {
	from   int64 // the analysis covers the stream from this time on (Analyzer.StartAt)
	open   openSet[collInst]
	rows   map[collKey]*collStats
	given  map[collKey]*partStats // instances given up past the bound on open ones (Partial)
	late   stragglers
	ranks  []int32
	arrive []int64
	// unrecorded are, by communicator, the members that left no record (a membership mark with
	// timeline.StatusNoRecord: a Flight Recorder dump missing or left out), at most the
	// communicator's ranks.
	unrecorded map[uint32]map[int32]struct{}
}

func newCollectives() *collectives {
	c := &collectives{open: newOpenSet[collInst](), rows: map[collKey]*collStats{}, given: map[collKey]*partStats{}, late: newStragglers(),
		unrecorded: map[uint32]map[int32]struct{}{}}
	c.open.evict = func(in *collInst) {
		addPartial(c.given, in)
		c.lateAt(in, &c.late)
	}
	return c
}

// partStats folds the instances some rank never reported as collStats folds the complete ones,
// over the ranks seen: how many, their bytes (each the mean over the ranks seen: a uniform
// collective's size whichever ranks reported), their time (last end − first start of the ranks
// seen: a lower bound, as a missing rank's part can only widen it), the fewest and most ranks
// seen in one, and the communicators they ran on (whose unrecorded members the row names).
type partStats struct {
	collStats
	seenMin, seenMax int
	comms            map[uint32]struct{}
}

// clone returns an independent copy.
func (s *partStats) clone() *partStats {
	cp := *s
	cp.lat = s.lat.clone()
	cp.comms = maps.Clone(s.comms)
	return &cp
}

// addPartial folds an instance not every rank reported into m.
func addPartial(m map[collKey]*partStats, in *collInst) {
	if in.n == 0 {
		return
	}
	bytes := in.sum / int64(in.n)
	k := collKey{in.op, in.ranks, SizeClass(bytes), in.algo, in.proto, in.emulated}
	s := m[k]
	if s == nil {
		s = &partStats{seenMin: in.n, seenMax: in.n, comms: map[uint32]struct{}{}}
		m[k] = s
	}
	s.fold(in, bytes)
	s.seenMin, s.seenMax = min(s.seenMin, in.n), max(s.seenMax, in.n)
	if in.comm != 0 {
		s.comms[in.comm] = struct{}{}
	}
}

// fold adds an instance of bytes (its mean over the ranks seen) to the row.
func (s *collStats) fold(in *collInst, bytes int64) {
	s.count++
	s.channels = max(s.channels, in.channels)
	s.bytes += bytes
	if in.timeUnknown {
		s.unknownTime++
		return
	}
	t := in.end - in.start
	s.timedBytes += bytes
	s.timeNs += t
	s.lat.Add(float64(t))
}

func (c *collectives) add(e *timeline.Event) {
	switch {
	case e.Kind == timeline.KindCollective && e.Status == timeline.StatusOK:
		c.fold(e) // the test inlines into Analyzer.Emit (see transfers.add)
	case e.Kind == timeline.KindMark && e.Status == timeline.StatusNoRecord && e.Comm != 0 && e.Peer != timeline.NoDevice:
		if seq, ok := e.OpSeq(); ok && seq == 0 {
			set := c.unrecorded[e.Comm]
			if set == nil {
				set = map[int32]struct{}{}
				c.unrecorded[e.Comm] = set
			}
			set[e.Peer] = struct{}{}
		}
	}
}

func (c *collectives) fold(e *timeline.Event) {
	in := c.open.get(e.Op)
	if in == nil {
		in = c.open.open(e.Op)
		*in = collInst{op: timeline.CollOp(e.Sub), ranks: int(e.Ranks), start: e.Start, end: e.End, comm: e.Comm, arrivals: in.arrivals[:0]}
		in.algo, in.proto, in.channels = e.NCCLChoice()
	}
	in.start, in.end = min(in.start, e.Start), max(in.end, e.End)
	in.sum += max(e.Bytes, 0)
	in.n++
	in.emulated = in.emulated || e.Emulated()
	if e.TimeUnknown() {
		// Its start is when its rank created it, not when it ran: no arrival to compare.
		in.timeUnknown = true
	} else {
		in.arrivals = append(in.arrivals, collArrival{e.Device, e.Start})
	}
	if in.n >= max(in.ranks, 1) || e.Op == 0 {
		c.finish(in)
		c.open.done(e.Op, in)
	}
}

func (c *collectives) finish(in *collInst) {
	bytes := in.sum / int64(in.n) // every rank's size for uniform collectives; ragged: the mean a rank sent
	k := collKey{in.op, in.ranks, SizeClass(bytes), in.algo, in.proto, in.emulated}
	s := c.rows[k]
	if s == nil {
		s = &collStats{}
		c.rows[k] = s
	}
	s.fold(in, bytes)
	c.lateAt(in, &c.late)
}

// lateAt folds instance in's straggler, if it has one, into late.
func (c *collectives) lateAt(in *collInst, late *stragglers) {
	if len(in.arrivals) < 2 {
		return
	}
	c.ranks, c.arrive = c.ranks[:0], c.arrive[:0]
	for _, a := range in.arrivals {
		c.ranks = append(c.ranks, a.rank)
		c.arrive = append(c.arrive, a.start)
	}
	late.add(c.ranks, c.arrive, in.n < in.ranks)
}

// Collective is one (op, ranks, size class, algorithm/protocol) row of collective instances, with
// nccl-tests' bytes:
// algbw = bytes / time over all instances (bytes-weighted), busbw = algbw × the op's bus factor.
// Bandwidths are nil (unknown) when the size is unknown (imported kernels without sizes), and in
// an Emulated row, whose time is that of what stood in for the collective, not of its ranks'
// links. Ranks,
// SizeClass and Bytes are 0 when unknown (a trace that records no group or message size: no
// collective runs over 0 ranks or moves 0 bytes), and JSON writes them null, never 0.
type Collective struct {
	Op        string `json:"op"`
	Ranks     int    `json:"ranks"`
	SizeClass int64  `json:"size_class"`
	Bytes     int64  `json:"bytes"` // mean bytes per instance (nccl-tests size)
	Count     int64  `json:"count"`
	// UnknownTime of the Count instances are of unknown time: some rank's part carried
	// timeline.AuxTimeUnknown (a Flight Recorder entry not retired, without duration_ms). They
	// are in Count and Bytes but in no time figure (TimeNs, the percentiles, the bandwidths);
	// when every instance's time is unknown, TimeNs is unknown too (0 here, null in JSON).
	UnknownTime int64    `json:"unknown_time"`
	TimeNs      int64    `json:"time_ns_total"`
	P50Ns       *int64   `json:"time_ns_p50"`
	P99Ns       *int64   `json:"time_ns_p99"`
	AlgBW       *float64 `json:"algbw_gbps"`
	BusBW       *float64 `json:"busbw_gbps"`
	// AlgoProto is NCCL Inspector's label of the algorithm and protocol the instances ran with
	// ("Ring_LL128"), empty when the source does not say; Channels the most channels any used, nil
	// when not known. Both keys are always present, so every backend's report has the same shape.
	AlgoProto string `json:"algo_proto"`
	Channels  *int   `json:"channels"`
	// RanksSeen is a partial row's (Collectives.Partial): the fewest and most ranks that reported
	// an instance of it, of Ranks; nil for a row of complete instances. A partial row's figures
	// are of the ranks seen: its times (last end − first start of the ranks seen) are lower
	// bounds and its bandwidths upper bounds of every rank's, as a rank unseen could only have
	// started earlier or ended later.
	RanksSeen *[2]int `json:"ranks_seen"`
	// Unrecorded names, in a partial row, the members of its instances' communicators that left
	// no record at all (a Flight Recorder dump missing or left out): at most 16, in rank order;
	// UnrecordedCount is how many there are. Such a rank may be the one the others waited for.
	Unrecorded      []int32 `json:"ranks_unrecorded"`
	UnrecordedCount int     `json:"ranks_unrecorded_count"`
	// Emulated says the row's instances stood in for the collective the topology would run
	// (timeline.AuxEmulated: the cuda backend's --fit with ranks sharing a GPU, where NCCL ran it
	// over the GPUs its ranks really span, or not at all over one): its time is what ran, and it
	// has no algbw or busbw.
	Emulated bool `json:"emulated"`
}

// collectiveJSON is Collective as written: the fields that may be unknown as pointers.
type collectiveJSON struct {
	Op          string   `json:"op"`
	Ranks       *int     `json:"ranks"`
	SizeClass   *int64   `json:"size_class"`
	Bytes       *int64   `json:"bytes"`
	Count       int64    `json:"count"`
	UnknownTime int64    `json:"unknown_time"`
	TimeNs      *int64   `json:"time_ns_total"`
	P50Ns       *int64   `json:"time_ns_p50"`
	P99Ns       *int64   `json:"time_ns_p99"`
	AlgBW       *float64 `json:"algbw_gbps"`
	BusBW       *float64 `json:"busbw_gbps"`
	AlgoProto   string   `json:"algo_proto"`
	Channels    *int     `json:"channels"`
	RanksSeen   *[2]int  `json:"ranks_seen"`
	// Unrecorded is never null: an empty list says no member is known to have left no record.
	Unrecorded      []int32 `json:"ranks_unrecorded"`
	UnrecordedCount int     `json:"ranks_unrecorded_count"`
	Emulated        bool    `json:"emulated"`
}

// TimeKnown reports whether TimeNs is a figure (some instance's time is known, or there is none).
func (c Collective) TimeKnown() bool { return c.Count == 0 || c.UnknownTime < c.Count }

// MarshalJSON writes the row with null for what is unknown (Ranks, SizeClass, Bytes at 0; the time
// when no instance's is known). A null reads back as 0, unknown again.
func (c Collective) MarshalJSON() ([]byte, error) {
	un := c.Unrecorded
	if un == nil {
		un = []int32{}
	}
	var timeNs *int64
	if c.TimeKnown() {
		timeNs = &c.TimeNs
	}
	return json.Marshal(collectiveJSON{Op: c.Op, Ranks: known(c.Ranks), SizeClass: known(c.SizeClass), Bytes: known(c.Bytes), Count: c.Count,
		UnknownTime: c.UnknownTime, TimeNs: timeNs, P50Ns: c.P50Ns, P99Ns: c.P99Ns, AlgBW: c.AlgBW, BusBW: c.BusBW, AlgoProto: c.AlgoProto, Channels: c.Channels, RanksSeen: c.RanksSeen,
		Unrecorded: un, UnrecordedCount: c.UnrecordedCount, Emulated: c.Emulated})
}

// known is v, or nil when v is 0: the unknown of a count or size that cannot be 0 when known.
func known[T int | int64](v T) *T {
	if v == 0 {
		return nil
	}
	return &v
}

// Collectives are the collective rows and what could not be grouped.
type Collectives struct {
	Rows []Collective `json:"rows"`
	// Stragglers are the ranks that started measurably last at collective instances of two ranks or
	// more (stragglers: after the median rank and after every other): how often, and how late after
	// the median rank's start (p50), most often first. Empty when no rank ever started late.
	Stragglers []Straggler `json:"stragglers"`
	// Open counts instances still waiting for ranks; Incomplete those given up past the bound on
	// open instances. Cut counts the open ones begun before the analysis starts (a replay from T):
	// their other ranks' parts may have ended before T, unseen, rather than never.
	Open       int   `json:"open"`
	Incomplete int64 `json:"incomplete"`
	Cut        int   `json:"cut"`
	// Partial are rows of the instances Unreported counts (given up, or open now but for those
	// cut), folded as Rows are over the ranks seen, which they name (Collective.RanksSeen): a log
	// of some ranks only, a job with a rank's dump missing, a job killed mid-collective. Before
	// the stream ends an open instance may still complete.
	Partial []Collective `json:"partial"`
}

// Unreported is how many instances some rank never reported, once the stream has ended (the
// report's collectives_incomplete): those given up past the bound, and those still open at the
// end (one file of a two-rank NCCL Inspector log, a job killed mid-collective), but for those cut
// by the analysis's start. Before the end, an open instance may still hear from its other ranks.
func (c Collectives) Unreported() int64 { return c.Incomplete + int64(c.Open-c.Cut) }

// UnrecordedRanks names the ranks the partial rows' communicators hold that left no record (a
// Flight Recorder dump missing or left out): the first of them in rank order, and how many
// there are (a lower bound when rows named different ranks past their own bound).
func UnrecordedRanks(partial []Collective) ([]int32, int) {
	var ranks []int32
	n := 0
	for _, c := range partial {
		ranks = append(ranks, c.Unrecorded...)
		n = max(n, c.UnrecordedCount)
	}
	slices.Sort(ranks)
	ranks = slices.Compact(ranks)
	return ranks, max(n, len(ranks))
}

func (c *collectives) result() Collectives {
	out := Collectives{Rows: []Collective{}, Open: c.open.len(), Incomplete: c.open.given}
	if c.from > 0 {
		for _, in := range c.open.byOp {
			if in.start < c.from {
				out.Cut++
			}
		}
	}
	out.Partial, out.Stragglers = c.partial()
	for k, s := range c.rows {
		out.Rows = append(out.Rows, s.row(k))
	}
	slices.SortFunc(out.Rows, cmpRows)
	return out
}

// row is the row of key k: nccl-tests' figures over its instances.
func (s *collStats) row(k collKey) Collective {
	// The rate is the timed instances' bytes over their time: an instance of unknown time is not
	// one that took none.
	row := Collective{Op: k.op.String(), Ranks: k.ranks, SizeClass: k.class, Bytes: s.bytes / s.count, Count: s.count, UnknownTime: s.unknownTime,
		TimeNs: s.timeNs, P50Ns: s.lat.quantileNs(50), P99Ns: s.lat.quantileNs(99), AlgBW: rate(s.timedBytes, s.timeNs),
		AlgoProto: algoProto(k.algo, k.proto), Emulated: k.emulated}
	if k.emulated {
		// What ran was not the collective over the topology's links: one GPU's ranks moved
		// nothing (NCCL returns at once from a 1-rank all-reduce), and NCCL over the GPUs the
		// ranks share is another collective. A rate of it would pose as the topology's.
		row.AlgBW = nil
	}
	if s.channels > 0 {
		ch := s.channels
		row.Channels = &ch
	}
	if row.AlgBW != nil && k.ranks > 1 {
		b := roundRate(*row.AlgBW * k.op.BusFactor(k.ranks))
		row.BusBW = &b
	}
	return row
}

// maxUnrecorded bounds the ranks a partial row names (Collective.Unrecorded).
const maxUnrecorded = 16

// partial is the partial rows: the instances given up, and those open now (but those cut by the
// analysis's start, whose other ranks may have ended before it, unseen); and the stragglers with
// those open instances folded in (over an overlay: an open instance may yet complete).
func (c *collectives) partial() ([]Collective, []Straggler) {
	m := make(map[collKey]*partStats, len(c.given))
	for k, s := range c.given {
		m[k] = s.clone()
	}
	late := c.late.overlay()
	for _, in := range c.open.byOp {
		if c.from > 0 && in.start < c.from {
			continue
		}
		addPartial(m, in)
		c.lateAt(in, late)
	}
	out := make([]Collective, 0, len(m))
	for k, s := range m {
		row := s.row(k)
		row.RanksSeen = &[2]int{s.seenMin, s.seenMax}
		row.Unrecorded, row.UnrecordedCount = c.unrecordedOf(s.comms)
		out = append(out, row)
	}
	slices.SortFunc(out, cmpRows)
	return out, late.result()
}

// unrecordedOf names the members of comms that left no record: the first maxUnrecorded in rank
// order, and how many there are.
func (c *collectives) unrecordedOf(comms map[uint32]struct{}) ([]int32, int) {
	var all []int32
	for comm := range comms {
		for r := range c.unrecorded[comm] {
			all = append(all, r)
		}
	}
	if len(all) == 0 {
		return nil, 0
	}
	slices.Sort(all)
	all = slices.Compact(all)
	return slices.Clip(all[:min(len(all), maxUnrecorded)]), len(all)
}

// cmpRows orders rows by op, ranks, size class and algorithm/protocol.
func cmpRows(a, b Collective) int {
	if a.Op != b.Op {
		if a.Op < b.Op {
			return -1
		}
		return 1
	}
	if a.Ranks != b.Ranks {
		return a.Ranks - b.Ranks
	}
	if c := cmpInt(a.SizeClass, b.SizeClass); c != 0 {
		return c
	}
	if a.AlgoProto < b.AlgoProto {
		return -1
	}
	if a.AlgoProto > b.AlgoProto {
		return 1
	}
	if a.Emulated != b.Emulated {
		if b.Emulated {
			return -1
		}
		return 1
	}
	return 0
}

// algoProto labels a choice as NCCL Inspector does; "" when it is not known.
func algoProto(a timeline.NCCLAlgo, p timeline.NCCLProto) string {
	e := timeline.Event{Kind: timeline.KindCollective, Aux: timeline.PackNCCL(a, p, 0)}
	return e.AlgoProto()
}
