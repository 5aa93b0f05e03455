package inspector

import (
	"cmp"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/xfertop/xfertop/importers/kineto"
	"github.com/xfertop/xfertop/join"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// Format names the importer in a report (timeline.Meta.Backend) and in importers.Result.
const Format = "nccl-inspector"

// Defaults of Options' bounds.
const (
	DefaultMaxLineBytes = 1 << 20  // Inspector's lines are a few hundred bytes; verbose ones a few KiB
	DefaultMaxRecords   = 16 << 20 // 16 Mi operations: 1.3 GiB of events
)

// Options bound what an import may cost.
type Options struct {
	MaxLineBytes int // one line of a log (0: DefaultMaxLineBytes)
	MaxRecords   int // operations in all the files (0: DefaultMaxRecords)
	// MaxFileBytes, when positive, bounds the bytes of one file, after decompression
	// (--max-input-bytes); a file past it is refused. 0: no bound but the line and record ones.
	MaxFileBytes int64
	Context      context.Context
	// Progress, when set, is told after each file how many of the files have been read.
	Progress func(done, total int64)
}

func (o Options) withDefaults() Options {
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = DefaultMaxLineBytes
	}
	if o.MaxRecords <= 0 {
		o.MaxRecords = DefaultMaxRecords
	}
	return o
}

// ReadFiles imports Inspector's files (or the directories holding them) as one job's events, in
// start order.
func ReadFiles(paths []string, opts Options) (*kineto.Imported, error) {
	var all []timeline.Event
	im, err := Stream(paths, opts, nil, func(b []timeline.Event) error { all = append(all, b...); return nil })
	if im != nil {
		im.Events = all
	}
	return im, err
}

// Stream imports Inspector's files as ReadFiles does, telling begin what was imported (events
// aside) before handing the events to emit in batches, in start order.
func Stream(paths []string, opts Options, begin func(*kineto.Imported) error, emit func([]timeline.Event) error) (*kineto.Imported, error) {
	opts = opts.withDefaults()
	files, err := Expand(paths)
	if err != nil {
		return nil, err
	}
	// Each file is read on its own first: one that is damaged, or of another job, is left out with
	// a warning naming it and the line, and the rest analysed (the policy of every importer of
	// per-rank files); only when nothing is left is the import refused.
	st := newState(opts)
	var parts []part
	var first error // the first file left out
	held := 0
	for i, p := range files {
		if opts.Context != nil && opts.Context.Err() != nil {
			return nil, opts.Context.Err()
		}
		fst := newState(opts)
		fst.opts.MaxRecords = opts.MaxRecords - held
		if err := fst.readFile(p); err != nil {
			var le *LimitError
			if errors.As(err, &le) && le.What == "operations" {
				le.Limit = int64(opts.MaxRecords)
			}
			if fatal(err) {
				return nil, err
			}
			first = cmp.Or(first, err)
			st.warn.add(fmt.Sprintf("%v: left out (the other files are read)", err))
		} else {
			parts = append(parts, part{p, fst})
			held += len(fst.recs)
		}
		if opts.Progress != nil { // a file left out was read too: the count reaches the total
			opts.Progress(int64(i+1), int64(len(files)))
		}
	}
	other := foreignParts(parts)
	for _, i := range sortedKeys(other) {
		st.warn.add(other[i])
		first = cmp.Or(first, error(errors.New(other[i])))
	}
	for i := range parts {
		if _, ok := other[i]; ok {
			continue
		}
		if err := st.merge(parts[i].st); err != nil {
			return nil, err
		}
	}
	st.dropRepeats()
	if len(st.recs) == 0 && first != nil && len(parts) == len(other) {
		return nil, first
	}
	if len(st.recs) == 0 {
		// Say why where the reader knows: a file cut inside its first line, records left out.
		why := ""
		if len(st.warn.list) > 0 {
			why = " (" + strings.Join(st.warn.list, "; ") + ")"
		}
		return nil, fmt.Errorf("%s: no collective or p2p records%s", strings.Join(files, ", "), why)
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

// readFile reads one file, a log or a Prometheus dump as its content says.
func (st *state) readFile(path string) error {
	r, closeFn, err := openFile(path)
	if err != nil {
		return err
	}
	defer closeFn()
	_, st.gzipped = r.(*gzip.Reader)
	if st.opts.MaxFileBytes > 0 {
		r = &capReader{r: r, max: st.opts.MaxFileBytes}
	}
	head := make([]byte, 512)
	br := newPeeker(r)
	n, perr := br.peek(head)
	switch Sniff(head[:n]) {
	case JSONLines:
		return st.tooBig(path, st.readLog(path, br))
	case Prometheus:
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		return st.tooBig(path, st.readProm(path, br, fi.ModTime().UnixNano()))
	}
	if errors.Is(perr, errFileTooBig) { // the first 512 bytes are past a tiny bound
		return st.tooBig(path, errFileTooBig)
	}
	return fmt.Errorf("%s: not an NCCL Inspector log or Prometheus dump (its first bytes name no Inspector record)", path)
}

// build settles devices and times, and passes every operation through a join.Join.
func (st *state) build(source string) ([]timeline.Event, *kineto.Imported, error) {
	devs, how := st.devices()
	st.place()
	// Each process's clock is its host's wall clock: a member's epoch is its first time, and the
	// join places it on the session's (the earliest of them).
	first := make([]int64, len(st.procs))
	var epoch int64
	for i := range st.recs {
		r := &st.recs[i]
		t := r.start
		if r.queued > 0 && r.queued < t {
			t = r.queued
		}
		if first[r.proc] == 0 || t < first[r.proc] {
			first[r.proc] = t
		}
	}
	for _, f := range first {
		if f != 0 && (epoch == 0 || f < epoch) {
			epoch = f
		}
	}
	j := join.New(join.Config{Epoch: epoch})
	members := make([]*join.Member, len(st.procs))
	for i, p := range st.procs {
		m := &recordings.Meta{EpochUnixNs: first[i], Extra: map[string]string{
			"nccl.host": p.host, "nccl.pid": strconv.FormatInt(p.pid, 10), "nccl.rank": strconv.Itoa(int(devs[i]))}}
		mb, err := j.Add(p.name, m)
		if err != nil {
			return nil, nil, err
		}
		members[i] = mb
	}
	strs := j.Strings()
	labels := map[string]uint32{}
	events := make([]timeline.Event, 0, len(st.recs))
	for i := range st.recs {
		r := &st.recs[i]
		e := timeline.Event{Kind: r.kind, Sub: r.sub, Aux: r.aux, Bytes: r.bytes, Device: devs[r.proc], Peer: timeline.NoDevice,
			Comm: r.comm, Stream: r.comm, Ranks: r.nranks, Queued: -1,
			Start: r.start - first[r.proc], End: r.start - first[r.proc] + max(r.execNs, 0)}
		if r.queued > 0 && r.queued <= r.start {
			e.Queued = r.queued - first[r.proc]
		}
		if r.kind == timeline.KindCollective && !r.series {
			// A series is one GPU's aggregate: no op id, so the analysis takes it as a whole
			// instance (its Inspector busbw), not as one rank's part waiting for the others.
			e.Op = uint64(r.comm)<<40 | r.sn&(1<<40-1)
		}
		if r.peer >= 0 {
			if p, ok := st.ranks[commRankKey{r.comm, r.peer}]; ok {
				e.Peer = devs[p]
			}
		}
		j.Event(members[r.proc], &e)
		id, ok := labels[r.label]
		if !ok && len(labels) < maxLabels {
			id = strs.ID(r.label)
			labels[r.label] = id
		}
		e.Label = id
		events = append(events, e)
	}
	slices.SortStableFunc(events, func(a, b timeline.Event) int { return cmp.Compare(a.Start, b.Start) })
	im := &kineto.Imported{Strings: strs, Source: source, Format: Format, Devices: j.Devices(), EpochUnixNs: epoch,
		Extra: st.extra(how), Warnings: st.warnings(how), RankHosts: map[int32]string{}}
	named := true
	for i, p := range st.procs {
		im.RankHosts[devs[i]] = p.host
		named = named && p.host != ""
	}
	if named {
		// Each process's events carry its host as the join numbered it (one name, one number):
		// the one host map takes them, and their names (join.Join.NameHosts).
		im.Extra[timeline.HostsInEventsKey] = "1"
		j.NameHosts(im.Extra)
	}
	if wide := st.procs[0].wide; strings.HasPrefix(how, "ranks") && wide > 0 {
		im.World = st.comms[wide-1].nranks
	}
	return events, im, nil
}

// devices numbers the processes: by their rank in one communicator every process reports on
// (the job's world), or else by host and pid. It says which.
func (st *state) devices() ([]int32, string) {
	devs := make([]int32, len(st.procs))
	wide := st.procs[0].wide
	seen := map[int32]bool{}
	ok := true
	for i, p := range st.procs {
		if p.wide == 0 || p.wide != wide || seen[p.wideR] {
			ok = false
			break
		}
		seen[p.wideR] = true
		devs[i] = p.wideR
	}
	if ok {
		c := st.comms[wide-1]
		return devs, fmt.Sprintf("ranks of communicator %s (%d ranks)", c.id, c.nranks)
	}
	order := make([]int, len(st.procs))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool {
		pa, pb := st.procs[order[a]], st.procs[order[b]]
		if pa.host != pb.host {
			return pa.host < pb.host
		}
		return pa.pid < pb.pid
	})
	for d, i := range order {
		devs[i] = int32(d)
	}
	return devs, "host and pid (no communicator spans every process)"
}

// place gives a start to the operations without kernel timestamps: within each process and
// communicator, in sequence order, each ends at its dump's time or at the next one's start,
// whichever is earlier, so that they lie back to back and never after their dump.
func (st *state) place() {
	var idx []int
	for i := range st.recs {
		if st.recs[i].start <= 0 {
			idx = append(idx, i)
		}
	}
	st.untimed = int64(len(idx))
	sort.Slice(idx, func(a, b int) bool {
		ra, rb := &st.recs[idx[a]], &st.recs[idx[b]]
		if ra.proc != rb.proc {
			return ra.proc < rb.proc
		}
		if ra.comm != rb.comm {
			return ra.comm < rb.comm
		}
		return ra.sn < rb.sn
	})
	for k := len(idx) - 1; k >= 0; k-- {
		r := &st.recs[idx[k]]
		end := r.dumpNs
		if k+1 < len(idx) {
			n := &st.recs[idx[k+1]]
			if n.proc == r.proc && n.comm == r.comm {
				end = min(end, n.start)
			}
		}
		r.start = end - max(r.execNs, 0)
	}
}

// extra describes the import for the report's meta.
func (st *state) extra(how string) map[string]string {
	x := map[string]string{"inspector.devices": how}
	vs := make([]string, 0, len(st.versions))
	for v, n := range st.versions {
		vs = append(vs, fmt.Sprintf("%s (%d records)", v, n))
	}
	sort.Strings(vs)
	x["inspector.versions"] = strings.Join(vs, ", ")
	for i, c := range st.comms {
		if c.name != "" && c.name != "unknown" {
			x[fmt.Sprintf("comm.%d", i+1)] = fmt.Sprintf("%s %s (%d ranks)", c.id, c.name, c.nranks)
		}
	}
	for i, p := range st.procs {
		x[fmt.Sprintf("inspector.process.%d", i)] = fmt.Sprintf("%s pid %d", p.host, p.pid)
	}
	return x
}

// warnings are the import's warnings: what was left out or approximated.
func (st *state) warnings(how string) []string {
	w := append([]string(nil), st.warn.list...)
	if st.untimed > 0 && st.prom < st.untimed {
		w = append(w, fmt.Sprintf("%d records carry no kernel timestamps (Inspector without NCCL_INSPECTOR_DUMP_VERBOSE=1): "+
			"laid back to back in sequence order, ending at their dump's time; their durations are Inspector's exec times, their start times approximate", st.untimed-st.prom))
	}
	if st.prom > 0 {
		w = append(w, fmt.Sprintf("%d Prometheus series read: each is an aggregate over a dump interval, imported as one operation of its bucket's smallest size "+
			"lasting the mean exec time, at the file's modification time", st.prom))
	}
	if st.dropped > 0 {
		w = append(w, fmt.Sprintf("Inspector's rings overwrote %d records before they were dumped (its dump_stats say so): they are missing", st.dropped))
	}
	if st.proxy > 0 {
		w = append(w, fmt.Sprintf("%d proxy trace records left out (host-side proxy timing, not read yet)", st.proxy))
	}
	if !strings.HasPrefix(how, "ranks") && len(st.procs) > 1 {
		w = append(w, "devices numbered by "+how)
	}
	return w
}
