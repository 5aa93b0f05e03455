package join

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// MergeBatch is how many events a Merged hands out at a time.
const MergeBatch = recordings.DefaultBatch

// Merged reads the per-rank recordings of one job (the plugin's XFERTOP_RECORD_DIR files) as one
// session, through the same Join as a live attach: each file's clock placed on its wall clock,
// ranks kept apart, peers translated; a collective posted by some ranks only when every file has
// ended is those ranks' waits for their peers, ended with the job (the diagnosis judges them). It
// merges k ways by start time, holding one block of events per file: memory follows the files'
// chunks, not their length. Next / At / Err iterate it, as recordings.Reader does.
type Merged struct {
	join     *Join
	files    []*mergeFile
	heads    mergeHeap
	meta     timeline.Meta
	out      []timeline.Event
	err      error
	maxEnd   int64
	finished bool
	skipped  []string // the files left out, torn before they said which rank they are
}

// mergeFile is one rank's recording: its reader, its member of the join, and its current block.
type mergeFile struct {
	path  string
	r     *recordings.Reader
	mb    *Member
	block []timeline.Event
	i     int
	known int // entries of its string table given to the join
	idx   int
}

func (f *mergeFile) headTime() int64 { return f.block[f.i].Start + f.mb.offset }

type mergeHeap []*mergeFile

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(i, j int) bool {
	if c := cmp.Compare(h[i].headTime(), h[j].headTime()); c != 0 {
		return c < 0
	}
	return h[i].idx < h[j].idx
}
func (h mergeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(*mergeFile)) }
func (h *mergeHeap) Pop() any {
	old := *h
	f := old[len(old)-1]
	*h = old[:len(old)-1]
	return f
}

// MergeError is a recording that cannot be merged with a job's other ranks: what is wrong, and in
// which file.
type MergeError struct {
	File   string
	Reason string
}

func (e *MergeError) Error() string { return e.File + ": " + e.Reason }

// MergeRecordings opens the per-rank recordings at paths as one session. Each must be a rank's
// recording made by the plugin (its meta names the rank, host and process, and its clock's epoch);
// two of one rank, or a file that cannot be read, is an error naming the file.
func MergeRecordings(paths []string, opts recordings.Options) (*Merged, error) {
	if len(paths) == 0 {
		return nil, errors.New("no recording to merge")
	}
	seen := map[string]bool{}
	for _, p := range paths {
		if seen[p] {
			return nil, &MergeError{p, "given twice"}
		}
		seen[p] = true
	}
	m := &Merged{}
	fail := func(err error) (*Merged, error) {
		m.Close()
		return nil, err
	}
	epoch := int64(0)
	var metas []recordings.Meta
	var firstSkip *tornError
	for i, p := range paths {
		r, err := recordings.Open(p, opts)
		if err != nil {
			return fail(err)
		}
		f := &mergeFile{path: p, r: r, idx: i}
		meta, err := rankMeta(f)
		var te *tornError
		if errors.As(err, &te) {
			// What replay does with the file alone: read what is there, which is nothing of the rank.
			m.skipped = append(m.skipped, te.Error())
			if firstSkip == nil {
				firstSkip = te
			}
			r.Close()
			continue
		}
		m.files = append(m.files, f)
		if err != nil {
			return fail(err)
		}
		metas = append(metas, meta)
		if epoch == 0 || meta.EpochUnixNs < epoch {
			epoch = meta.EpochUnixNs
		}
	}
	if len(m.files) == 0 { // every file torn before its meta: no rank to merge
		return fail(&MergeError{firstSkip.file, strings.TrimPrefix(firstSkip.tear, firstSkip.file+": ") +
			"; it ends before its meta (its rank, host and clock) was written, and so do the job's other files: nothing of any rank was recorded"})
	}
	m.join = New(Config{Epoch: epoch})
	hosts := map[string]bool{}
	ranks := map[int]string{}
	for i, f := range m.files {
		mb, err := m.join.Add(f.path, &metas[i])
		if err != nil {
			return fail(err)
		}
		// A live attach takes one process's reconnection as the same rank again; files are not
		// reconnections: two of one rank, even of one process (a copy), would count it twice.
		if other, ok := ranks[mb.Rank]; ok && mb.Rank >= 0 {
			return fail(&RankConflictError{Rank: mb.Rank, Name: f.path, Other: other})
		}
		ranks[mb.Rank] = f.path
		f.mb = mb
		hosts[mb.Host] = true
		f.takeStrings(m.join)
		if f.i < len(f.block) {
			heap.Push(&m.heads, f)
		}
	}
	first := metas[0]
	m.meta = timeline.Meta{Source: mergedSource(paths), Backend: first.Backend, Topology: "unknown", Devices: m.join.Devices(),
		IdleMode: first.IdleMode, KernelWaitNs: first.KernelWaitNs, EpochUnixNs: epoch, Writer: first.Writer,
		// Each event carries its rank's host as the rank named it (Join.Event): every consumer
		// places the ranks by those, as attach does live (analysis/hostmap).
		Extra: map[string]string{"nccl.ranks": strconv.Itoa(len(m.files)), "nccl.hosts": strconv.Itoa(len(hosts)), timeline.HostsInEventsKey: "1"}}
	m.join.NameHosts(m.meta.Extra) // the hosts' names, which views and reports show with their numbers
	return m, nil
}

// rankMeta reads a file's first block and its meta, and checks that it is a rank's recording.
func rankMeta(f *mergeFile) (recordings.Meta, error) {
	if !f.advance() && f.r.Err() != nil {
		return recordings.Meta{}, f.r.Err()
	}
	meta := f.r.Meta()
	if meta.Source == "" && len(meta.Extra) == 0 && !f.r.Indexed() && f.r.Err() == nil {
		return meta, tornBeforeMeta(f)
	}
	if _, ok := meta.Extra["nccl.rank"]; !ok {
		return meta, &MergeError{f.path, "not a rank's recording from the NCCL profiler plugin (its meta names no nccl.rank): replay it on its own"}
	}
	if meta.EpochUnixNs <= 0 {
		return meta, &MergeError{f.path, "the recording does not say when its clock started (epoch_unix_ns): its times cannot be aligned with the other ranks'"}
	}
	if n, err := strconv.Atoi(meta.Extra["nccl.rank"]); err != nil || n < 0 {
		// The plugin did not know its rank when it began writing: its first communicator says.
		extra := make(map[string]string, len(meta.Extra))
		for k, v := range meta.Extra {
			extra[k] = v
		}
		for _, e := range f.block {
			if e.Kind == timeline.KindCommInit {
				extra["nccl.rank"] = strconv.Itoa(int(e.Device))
				break
			}
		}
		meta.Extra = extra
	}
	return meta, nil
}

// tornError is a rank's recording torn before its meta chunk was written (a process killed as it
// began): it does not say which rank it is, and holds none of the rank's events.
type tornError struct {
	file, tear string
}

func (e *tornError) Error() string {
	return fmt.Sprintf("%s; it ends before its meta (its rank, host and clock) was written, so it holds nothing of its rank: left out of the job", e.tear)
}

// tornBeforeMeta describes the tear of a file whose meta was not read: the reader's own words
// (a torn tail at its offset) when it has them, else where the file ends.
func tornBeforeMeta(f *mergeFile) error {
	tear := strings.Join(f.r.Warnings(), "; ")
	if tear == "" || !strings.Contains(tear, "torn tail") {
		size := int64(-1)
		if st, err := os.Stat(f.path); err == nil {
			size = st.Size()
		}
		tear = fmt.Sprintf("%s: torn tail: the file ends at byte offset %d, after its header", f.path, size)
	}
	if !strings.HasPrefix(tear, f.path) {
		tear = f.path + ": " + tear
	}
	return &tornError{file: f.path, tear: tear}
}

func mergedSource(paths []string) string {
	if len(paths) <= 4 {
		return strings.Join(paths, ", ")
	}
	return fmt.Sprintf("%s, … (%d rank recordings)", strings.Join(paths[:3], ", "), len(paths))
}

// advance reads the file's next non-empty block; false at its end or on an error.
func (f *mergeFile) advance() bool {
	for f.r.Next() {
		if b := f.r.At(); len(b) > 0 {
			f.block, f.i = b, 0
			return true
		}
	}
	f.block, f.i = nil, 0
	return false
}

// takeStrings gives the join the labels the file's table gained with its last block.
func (f *mergeFile) takeStrings(j *Join) {
	all := f.r.Strings().All()
	if f.known == 0 {
		f.known = 1 // entry 0 is the empty label
	}
	if len(all) > f.known {
		j.AddStrings(f.mb, all[f.known:])
		f.known = len(all)
	}
}

// Meta describes the merged session: devices are the job's ranks.
func (m *Merged) Meta() timeline.Meta { return m.meta }

// Strings is the session's string table; it grows as the files are read.
func (m *Merged) Strings() *timeline.Strings { return m.join.Strings() }

// Next merges the next block of events; false at the end of every file or at the first error.
func (m *Merged) Next() bool {
	if m.err != nil || m.finished {
		return false
	}
	m.out = m.out[:0]
	for len(m.out) < MergeBatch && m.heads.Len() > 0 {
		f := m.heads[0]
		m.out = append(m.out, f.block[f.i]) // translated in place: a local would escape (Clock)
		f.i++
		e := &m.out[len(m.out)-1]
		if m.join.Event(f.mb, e) {
			m.maxEnd = max(m.maxEnd, e.End)
		} else {
			m.out = m.out[:len(m.out)-1]
		}
		if f.i < len(f.block) {
			heap.Fix(&m.heads, 0)
			continue
		}
		if f.advance() {
			f.takeStrings(m.join)
			heap.Fix(&m.heads, 0)
			continue
		}
		heap.Pop(&m.heads)
		if err := f.r.Err(); err != nil {
			m.err = err // the reader's errors name its file
			return false
		}
	}
	if m.heads.Len() == 0 {
		// Every rank has ended: what is still posted by some ranks only waited for its peers
		// until the end, and never had them.
		m.out = m.join.Waits(m.out, m.maxEnd, timeline.StatusTimeout)
		m.finished = true
	}
	return len(m.out) > 0
}

// At returns the block Next merged; it is reused by the next call.
func (m *Merged) At() []timeline.Event { return m.out }

// Err returns the first error, naming its file.
func (m *Merged) Err() error { return m.err }

// Dropped sums the events the ranks' plugins dropped.
func (m *Merged) Dropped() int64 {
	var n int64
	for _, f := range m.files {
		n += f.r.Dropped()
	}
	return n
}

// Ranks is how many files are merged: those given, less those left out (LeftOut).
func (m *Merged) Ranks() int { return len(m.files) }

// LeftOut is how many files were left out of the job, torn before their meta said which rank
// they are (each named in Warnings).
func (m *Merged) LeftOut() int { return len(m.skipped) }

// Warnings are the files' warnings, each naming its file.
func (m *Merged) Warnings() []string {
	out := append([]string(nil), m.skipped...)
	for _, f := range m.files {
		for _, w := range f.r.Warnings() {
			if !strings.Contains(w, f.path) {
				w = f.path + ": " + w
			}
			out = append(out, w)
		}
	}
	return out
}

// Outcome is how the job ended, as one recording's outcome says it: "ended" is empty when every
// rank's recording says its run ended normally; else it is the first rank's reason for ending early
// (or that its recording was not closed: its process died), naming the rank and its file, and how
// many other ranks did not end normally either.
func (m *Merged) Outcome() [][2]string {
	first, others := "", 0
	for _, f := range m.files {
		why, said := "", false
		for _, kv := range f.r.Outcome() {
			if kv[0] == "ended" {
				why, said = kv[1], true
			}
		}
		if !said {
			why = "the recording was not closed (the rank did not finish)"
		}
		switch {
		case why == "":
		case first == "":
			first = f.rankName() + ": " + why
		default:
			others++
		}
	}
	switch {
	case others == 1:
		first += " (and 1 other rank did not end normally)"
	case others > 1:
		first += fmt.Sprintf(" (and %d other ranks did not end normally)", others)
	}
	return [][2]string{{"ended", first}}
}

// rankName names the file's rank and the file, or the file alone when its rank is not known.
func (f *mergeFile) rankName() string {
	if f.mb.Rank < 0 {
		return f.path
	}
	return fmt.Sprintf("rank %d (%s)", f.mb.Rank, f.path)
}

// Close closes every file.
func (m *Merged) Close() error {
	var errs []error
	for _, f := range m.files {
		errs = append(errs, f.r.Close())
	}
	return errors.Join(errs...)
}
