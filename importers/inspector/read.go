package inspector

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/units"
)

// rec is one operation as read, before devices and times are settled.
type rec struct {
	proc   int32  // the process (state.procs)
	comm   uint32 // the communicator (state.comms), 1-based
	rank   int32  // the process's rank in the communicator
	peer   int32  // a p2p's peer, a rank in the communicator (−1: none)
	nranks uint16
	kind   timeline.Kind
	sub    uint8
	aux    uint32
	bytes  int64
	execNs int64  // −1: not known
	start  int64  // Unix ns of its first kernel's start; 0: untimed
	queued int64  // Unix ns the host started the op; −1: unknown
	dumpNs int64  // Unix ns of its dump: it ended before
	sn     uint64 // its sequence number in the communicator
	label  string
	// series: a Prometheus series, an aggregate over one GPU's dump interval, not one operation
	// the other ranks' parts could be matched with.
	series bool
}

// process is one writer of a log (a host and pid), or one GPU of a Prometheus dump.
type process struct {
	host  string
	pid   int64
	name  string // its first file
	wide  uint32 // the widest communicator it reports on
	wideN int
	wideR int32
}

type procKey struct {
	host string
	pid  int64
}

// state is what an import has read so far: operations, processes, communicators, warnings.
type state struct {
	opts     Options
	gzipped  bool // the file being read is gzipped: its offsets count decompressed bytes
	recs     []rec
	procs    []*process
	procIdx  map[procKey]int32
	comms    []commInfo
	commIdx  map[string]uint32
	ranks    map[commRankKey]int32 // (communicator, its rank) → process
	versions map[string]int
	warn     warnings
	dropped  int64 // operations Inspector's rings lost, as its dump markers say
	proxy    int64 // proxy trace lines left out
	untimed  int64
	prom     int64 // Prometheus series read
}

type commInfo struct {
	id     string
	name   string
	nranks int
	file   string // where it was first seen
	line   int
}

type commRankKey struct {
	comm uint32
	rank int32
}

func newState(opts Options) *state {
	return &state{opts: opts, procIdx: map[procKey]int32{}, commIdx: map[string]uint32{}, ranks: map[commRankKey]int32{}, versions: map[string]int{}}
}

// LimitError is an input past one of Options' bounds.
type LimitError struct {
	File  string
	Line  int
	What  string
	Limit int64
	Flag  string // the flag that set the bound, when one did
}

// tooBig turns a read that stopped at Options.MaxFileBytes into the LimitError naming the flag
// (other errors pass unchanged).
func (st *state) tooBig(path string, err error) error {
	if !errors.Is(err, errFileTooBig) {
		return err
	}
	what := "bytes in the file"
	if st.gzipped {
		what = "bytes in the file after decompression"
	}
	return &LimitError{File: path, What: what, Limit: st.opts.MaxFileBytes, Flag: "--max-input-bytes"}
}

func (e *LimitError) Error() string {
	if e.Flag != "" {
		return fmt.Sprintf("%s: more than %d %s (%s)", e.File, e.Limit, e.What, e.Flag)
	}
	return fmt.Sprintf("%s:%d: more than %d %s (a bound of the NCCL Inspector importer)", e.File, e.Line, e.Limit, e.What)
}

// errNotRecord is a line that is valid JSON but holds none of the parts of an Inspector record.
var errNotRecord = errors.New("valid JSON but no NCCL Inspector record (neither coll_perf nor p2p_perf nor dump_stats nor proxy_trace)")

// dumpCtx is a v4.3 file's context: the marker's header and metadata, and the operation lines it
// announced that have not come yet.
type dumpCtx struct {
	h         *header
	m         *metadata
	remaining int64
	line      int
}

// readLog reads one JSON-lines log into st.
func (st *state) readLog(path string, r io.Reader) error {
	lr := newLineReader(r, st.opts.MaxLineBytes)
	var ctx dumpCtx
	records, bad := 0, 0 // lines read as records; damaged lines left out
	of := ""             // a gzipped log's offsets count its decompressed bytes
	if st.gzipped {
		of = " of the decompressed data"
	}
	for {
		b, err := lr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, errLineTooLong) {
			return &LimitError{File: path, Line: lr.n, What: "bytes in one line", Limit: int64(st.opts.MaxLineBytes)}
		}
		if err != nil {
			return fmt.Errorf("%s:%d (byte %d%s): %w", path, lr.n+1, lr.off, of, err)
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		var l line
		if err := json.Unmarshal(b, &l); err != nil {
			n, size := lr.n, len(b)
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Field == "" {
				// The whole line is valid JSON but no object (an array, a string, a number): no
				// record, as a line of an object of no record's parts is not.
				if records == 0 {
					return fmt.Errorf("%s:%d: %w (a JSON %s)", path, n, errNotRecord, te.Value)
				}
				if bad++; bad <= maxBadLines {
					st.warn.add(fmt.Sprintf("%s:%d (byte %d%s): %v (a JSON %s): line left out", path, n, lr.off, of, errNotRecord, te.Value))
				}
				continue // a line put in, not a record damaged: a dump's records still to come stay so
			}
			if errors.As(err, &te) {
				// A value out of its field's range (a size past int64): the record is left out, as
				// the trace importers leave out such a field's event, and the import goes on.
				st.warn.add(fmt.Sprintf("%s:%d: %s %s is out of range (%s): record left out", path, n, te.Field, te.Value, te.Type))
				continue
			}
			if !lr.torn && !(cutShort(err) && lastLine(lr)) {
				if records == 0 {
					// Nothing read yet: the file is not an Inspector log (or begins damaged).
					return fmt.Errorf("%s:%d (byte %d%s): not an NCCL Inspector record: %w", path, n, lr.off+badByte(err), of, err)
				}
				// One damaged line among records costs that line, as a cut last line does: the
				// records before and after it stand. It took the place of one a dump announced.
				if bad++; bad <= maxBadLines {
					st.warn.add(fmt.Sprintf("%s:%d (byte %d%s): not an NCCL Inspector record: %v: line left out", path, n, lr.off+badByte(err), of, err))
				}
				ctx.remaining = max(ctx.remaining-1, 0)
				continue
			}
			// A log still being written, or a job stopped while Inspector wrote: its last line is
			// cut (with or without its newline); the records before it stand.
			what := "the last line is cut"
			if n == 1 {
				what = "the file is cut inside its first line"
			}
			st.warn.add(fmt.Sprintf("%s:%d: %s (%d bytes, its JSON unfinished): left out (a job stopped, or a log still being written)", path, n, what, size))
			break
		}
		if err := st.line(path, lr.n, &l, &ctx); err != nil {
			if records == 0 || !errors.Is(err, errNotRecord) {
				return err
			}
			// After records, such a line costs only itself, as a damaged line does; being whole
			// JSON, it was put in among the records rather than written over one, so a dump's
			// records still to come stay so.
			if bad++; bad <= maxBadLines {
				st.warn.add(fmt.Sprintf("%s:%d (byte %d%s): %v: line left out", path, lr.n, lr.off, of, errNotRecord))
			}
			continue
		}
		records++
	}
	if bad > 0 {
		what := "a damaged line (not an NCCL Inspector record) left out"
		if bad > 1 {
			what = fmt.Sprintf("%d damaged lines (not NCCL Inspector records) left out", bad)
		}
		st.warn.add(fmt.Sprintf("%s: %s; %s read", path, what, units.Counted(records, "record")))
	}
	if ctx.remaining > 0 {
		st.warn.add(fmt.Sprintf("%s: the dump that begins on line %d announced %d more records than the file holds: the file is cut", path, ctx.line, ctx.remaining))
	}
	return nil
}

// maxRateBps bounds the rate an operation's size over its exec time may claim: 100 TB/s, about 30×
// an H100's HBM (3.35 TB/s) and 100× its NVLink (900 GB/s); no GPU's links or memory move more.
const maxRateBps = 100e12

// plausible takes an operation's exec time as unknown when its size over it is a rate no GPU
// reaches (a corrupt or mistyped time: 1 GiB in 1 µs), with a warning naming the file and line,
// so that no such rate is shown as measured.
func (st *state) plausible(path string, n int, r *rec) {
	if r.bytes <= 0 || r.execNs < 0 || float64(r.bytes)*1e9 <= maxRateBps*float64(r.execNs) {
		return
	}
	name := map[timeline.Kind]string{timeline.KindSend: "send", timeline.KindRecv: "recv"}[r.kind]
	if r.kind == timeline.KindCollective {
		name = timeline.CollOp(r.sub).String()
	}
	claim := "no time"
	if r.execNs > 0 {
		claim = units.Rate(float64(r.bytes) * 1e9 / float64(r.execNs))
	}
	st.warn.add(fmt.Sprintf("%s:%d: %s of %s in %s claims %s, more than any GPU moves (%s): its exec time is taken as unknown",
		path, n, name, units.Bytes(r.bytes), units.Dur(r.execNs), claim, units.Rate(maxRateBps)))
	r.execNs = -1
	r.label += " (exec time implausible: taken as unknown)"
}

// cutShort reports whether a JSON error is the input ending before its value does.
func cutShort(err error) bool {
	var se *json.SyntaxError
	return errors.As(err, &se) && se.Error() == "unexpected end of JSON input"
}

// lastLine reports whether no line but blank ones follows the current one (it reads them).
func lastLine(lr *lineReader) bool {
	for {
		b, err := lr.Next()
		if errors.Is(err, io.EOF) {
			return true
		}
		if err != nil || len(bytes.TrimSpace(b)) > 0 {
			return false
		}
	}
}

// line takes one parsed line: a marker (its losses counted, and in v4.3 its context kept), an
// operation, or a proxy trace (left out).
func (st *state) line(path string, n int, l *line, ctx *dumpCtx) error {
	where := func(format string, a ...any) error {
		return fmt.Errorf("%s:%d: %s", path, n, fmt.Sprintf(format, a...))
	}
	if l.DumpStats != nil {
		if ctx.remaining > 0 {
			return where("a dump marker while %d records of the dump on line %d are still to come: interleaved or cut dumps", ctx.remaining, ctx.line)
		}
		ds := l.DumpStats
		st.dropped += max(ds.CollDropped, 0) + max(ds.P2PDropped, 0)
		*ctx = dumpCtx{}
		if l.Meta != nil && l.Meta.Version >= "v4.3" && l.Header != nil {
			coll, p2p := int64(0), int64(0)
			if ds.CollRecords != nil {
				coll = *ds.CollRecords
			}
			if ds.P2PRecords != nil {
				p2p = *ds.P2PRecords
			}
			if coll < 0 || p2p < 0 || ds.ProxyRecords < 0 {
				return where("negative record counts in dump_stats")
			}
			*ctx = dumpCtx{h: l.Header, m: l.Meta, remaining: coll + p2p + ds.ProxyRecords, line: n}
		}
		return nil
	}
	if len(l.Proxy) == 0 && l.op() == nil {
		// Valid JSON of no kind Inspector writes: readLog leaves it out as a damaged line once
		// records have been read, and refuses the file when it comes first.
		return fmt.Errorf("%s:%d: %w", path, n, errNotRecord)
	}
	h, m := l.Header, l.Meta
	if h == nil && m == nil {
		if ctx.remaining <= 0 {
			return where("an operation without its header and metadata, and no dump marker before it announcing it (v4.3 lines must follow their dump_stats line)")
		}
		h, m = ctx.h, ctx.m
		ctx.remaining--
	}
	if len(l.Proxy) > 0 {
		st.proxy++
		return nil
	}
	op := l.op()
	if h == nil || m == nil {
		return where("an operation without its header or metadata")
	}
	return st.add(path, n, h, m, op)
}

// add turns one operation into a rec.
func (st *state) add(path string, n int, h *header, m *metadata, op *perf) error {
	where := func(format string, a ...any) error {
		return fmt.Errorf("%s:%d: %s", path, n, fmt.Sprintf(format, a...))
	}
	if err := op.check(); err != nil {
		return where("%v", err)
	}
	switch {
	case h.ID == "":
		return where("header has no communicator id")
	case h.Rank == nil || *h.Rank < 0 || *h.Rank >= maxRanks:
		return where("header's rank is missing or out of range")
	case h.NRanks <= 0 || h.NRanks > maxRanks || *h.Rank >= h.NRanks:
		return where("header's n_ranks %d does not hold its rank", h.NRanks)
	case m.DumpUs == 0 || m.DumpUs > maxUs:
		return where("metadata's dump_timestamp_us %d is not a time", m.DumpUs)
	}
	if len(st.recs) >= st.opts.MaxRecords {
		return &LimitError{File: path, Line: n, What: "operations", Limit: int64(st.opts.MaxRecords)}
	}
	proc, err := st.process(path, n, m.Host, m.Pid)
	if err != nil {
		return err
	}
	comm, err := st.comm(path, n, h)
	if err != nil {
		return err
	}
	st.versions[m.Version]++
	r := rec{proc: proc, comm: comm, rank: int32(*h.Rank), peer: -1, nranks: uint16(h.NRanks), execNs: -1, queued: -1,
		dumpNs: int64(m.DumpUs) * 1000, sn: op.SN}
	if err := st.fill(&r, op); err != nil {
		return where("%v", err)
	}
	r.aux |= hostsAux(r.kind, h.NNodes)
	st.plausible(path, n, &r)
	st.note(proc, comm, r.rank, h.NRanks)
	st.recs = append(st.recs, r)
	return nil
}

// fill sets an operation's kind, size, choice, times and label.
func (st *state) fill(r *rec, op *perf) error {
	if op.p2p {
		switch strings.ToLower(op.Op) {
		case "send":
			r.kind = timeline.KindSend
		case "recv":
			r.kind = timeline.KindRecv
		default:
			return fmt.Errorf("p2p operation %q is neither Send nor Recv", op.Op)
		}
		if op.Peer != nil && *op.Peer >= 0 && *op.Peer < int(r.nranks) {
			r.peer = int32(*op.Peer)
		}
	} else {
		c, ok := timeline.ParseCollOp(op.Op)
		if !ok {
			return fmt.Errorf("collective %q is not one xfertop knows", op.Op)
		}
		r.kind, r.sub = timeline.KindCollective, uint8(c)
	}
	if op.Bytes != nil {
		r.bytes = *op.Bytes
	}
	if op.ExecUs != nil {
		r.execNs = int64(*op.ExecUs * 1000)
	}
	algo, _ := timeline.ParseNCCLAlgo(op.Algo)
	proto, _ := timeline.ParseNCCLProto(op.Proto)
	var channels int
	if t := op.Trace; t != nil {
		r.queued = usNs(max(t.CollStart, t.P2PStart))
		var first, last uint64
		for _, k := range t.Kernels {
			if k.Start == 0 || k.Start > maxUs || k.Stop > maxUs {
				continue
			}
			channels++
			if first == 0 || k.Start < first {
				first = k.Start
			}
			last = max(last, k.Stop, k.Record)
		}
		if first > 0 {
			r.start = usNs(first)
			if r.execNs < 0 && last > first {
				r.execNs = usNs(last) - r.start
			}
		}
	}
	if !r.p2pKind() {
		r.aux = timeline.PackNCCL(algo, proto, channels)
	}
	r.label = opLabel(op)
	return nil
}

// hostsAux is what a collective's node count (Inspector's nnodes; 0: not said) tells of the links
// its bus bytes cross: timeline.AuxOneHost or AuxManyHosts.
func hostsAux(kind timeline.Kind, nodes int) uint32 {
	switch {
	case kind != timeline.KindCollective:
		return 0
	case nodes == 1:
		return timeline.AuxOneHost
	case nodes > 1:
		return timeline.AuxManyHosts
	}
	return 0
}

func (r *rec) p2pKind() bool { return r.kind == timeline.KindSend || r.kind == timeline.KindRecv }

// usNs turns Inspector's µs into ns; 0 (not recorded) gives −1, unknown.
func usNs(us uint64) int64 {
	if us == 0 {
		return -1
	}
	return int64(us) * 1000
}

// opLabel is the label kept with an operation: Inspector's own numbers, beside what xfertop
// computes from the same bytes and time.
func opLabel(op *perf) string {
	var b strings.Builder
	b.WriteString("inspector:")
	if op.BusBW != nil {
		fmt.Fprintf(&b, " busbw %.2f GB/s", *op.BusBW)
	}
	if op.AlgBW != nil {
		fmt.Fprintf(&b, " algbw %.2f GB/s", *op.AlgBW)
	}
	if op.Timing != "" {
		b.WriteString(" (" + op.Timing + ")")
	}
	return b.String()
}

// process returns the index of the process writing on host with pid.
func (st *state) process(path string, n int, host string, pid int64) (int32, error) {
	k := procKey{host, pid}
	if i, ok := st.procIdx[k]; ok {
		return i, nil
	}
	if len(st.procs) >= maxProcs {
		return 0, &LimitError{File: path, Line: n, What: "processes", Limit: maxProcs}
	}
	i := int32(len(st.procs))
	st.procs = append(st.procs, &process{host: host, pid: pid, name: path, wideR: -1})
	st.procIdx[k] = i
	return i, nil
}

// comm returns the index of h's communicator.
func (st *state) comm(path string, n int, h *header) (uint32, error) {
	if i, ok := st.commIdx[h.ID]; ok {
		c := &st.comms[i-1]
		if c.nranks != h.NRanks {
			return 0, fmt.Errorf("%s:%d: communicator %s has %d ranks here and %d before", path, n, h.ID, h.NRanks, c.nranks)
		}
		return i, nil
	}
	if len(st.comms) >= maxComms || len(h.ID) > 256 || len(h.CommName) > 256 {
		return 0, &LimitError{File: path, Line: n, What: "communicators (or an id or name over 256 bytes)", Limit: maxComms}
	}
	st.comms = append(st.comms, commInfo{id: h.ID, name: h.CommName, nranks: h.NRanks, file: path, line: n})
	i := uint32(len(st.comms))
	st.commIdx[h.ID] = i
	return i, nil
}

// note records that proc is rank of comm (of nranks).
func (st *state) note(proc int32, comm uint32, rank int32, nranks int) {
	st.ranks[commRankKey{comm, rank}] = proc
	p := st.procs[proc]
	if nranks > p.wideN || (nranks == p.wideN && comm < p.wide) {
		p.wide, p.wideN, p.wideR = comm, nranks, rank
	}
}

// Bounds that no option raises: a job's ranks, its processes, its communicators, a timestamp
// (year 2200 in µs).
const (
	maxRanks  = 1 << 16
	maxProcs  = 1 << 16
	maxComms  = 1 << 16
	maxUs     = 7258118400 * 1000000
	maxLabels = 1 << 20
)

// maxBadLines bounds the damaged lines of one log named in warnings; the rest are counted.
const maxBadLines = 5

// warnings collects warnings, at most a few of each.
type warnings struct{ list []string }

func (w *warnings) add(s string) {
	if len(w.list) < 32 {
		w.list = append(w.list, s)
	}
}

// badByte is where in its line a record's JSON goes wrong: the byte a syntax error names (its
// Offset counts the bytes read, that one included), else the line's start.
func badByte(err error) int64 {
	var se *json.SyntaxError
	if errors.As(err, &se) && se.Offset > 0 {
		return se.Offset - 1
	}
	return 0
}
