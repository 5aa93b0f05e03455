package ras

import (
	"fmt"
	"sort"
	"strings"

	"github.com/xfertop/xfertop/importers/kineto"
	"github.com/xfertop/xfertop/timeline"
)

// commIDs numbers communicators by their hash, the same in every document of one job (a file's,
// or each poll of a live job's), from base on.
type commIDs struct {
	base uint32
	ids  map[string]uint32
}

func (c *commIDs) id(hash string) uint32 {
	if c.ids == nil {
		c.ids = map[string]uint32{}
	}
	id, ok := c.ids[hash]
	if !ok {
		id = c.base + uint32(len(c.ids)) + 1
		c.ids[hash] = id
	}
	return id
}

// findings appends doc's findings to im, as alerts (problems, each with its cause in Sub, which
// the diagnosis makes a finding of) and marks (healthy communicators) at time at. Devices are the
// ranks of the widest communicator (the job's world, when RAS saw it), found by host and pid; a
// rank of a process not in it keeps its communicator rank.
func findings(doc *Doc, path string, at int64, im *kineto.Imported, ids *commIDs) {
	world := worldRanks(doc)
	dev := func(r *Rank) int32 {
		if r.Rank < 0 {
			return timeline.NoDevice // ranks the text status counts without naming
		}
		if d, ok := world[procKey{r.Host, r.Pid}]; ok {
			return d
		}
		return int32(r.Rank)
	}
	var comm uint32
	add := func(c *Comm, d int32, status, cause uint8, kind timeline.Kind, msg string) {
		im.Events = append(im.Events, timeline.Event{Kind: kind, Sub: cause, Start: at, End: at, Queued: -1, Device: d, Peer: timeline.NoDevice,
			Comm: comm, Status: status, Ranks: uint16(min(c.Size, 1<<16-1)), Label: im.Strings.ID(msg)})
	}
	for i := range doc.Comms {
		c := &doc.Comms[i]
		comm = ids.id(c.Hash)
		absent := dedupe(c, path, im)
		name := fmt.Sprintf("RAS: communicator %s (%d ranks)", c.Hash, c.Size)
		im.Extra[fmt.Sprintf("comm.%d", comm)] = fmt.Sprintf("%s %d ranks (ncclras, %s)", c.Hash, c.Size, path)
		// First, the communicator itself: a membership mark without a member (timeline.SeqOp's
		// sequence 0), which names it and gives its size, so that it is listed with its ranks'
		// states (analysis.Communicator) whether or not any is in trouble. A poller tells it once.
		im.Events = append(im.Events, timeline.Event{Kind: timeline.KindMark, Start: at, End: at, Queued: -1, Device: timeline.NoDevice,
			Peer: timeline.NoDevice, Comm: comm, Ranks: uint16(min(c.Size, 1<<16-1)), Op: timeline.SeqOp(comm, 0), Aux: timeline.AuxSeqOp,
			Label: im.Strings.ID(fmt.Sprintf("RAS communicator %s", c.Hash))})
		problems := 0
		for _, r := range c.Missing {
			state, status, cause := "missing (did not answer RAS)", timeline.StatusTimeout, timeline.AlertRankMissing
			switch {
			case r.Status.Dead:
				state, status, cause = "considered dead (no RAS keep-alive for 60 s or more)", timeline.StatusError, timeline.AlertRankDead
			case r.Status.Unresponsive:
				state = "unresponsive (its RAS thread did not answer in time)"
			}
			add(c, dev(&r), status, cause, timeline.KindAlert, fmt.Sprintf("%s: %s is %s", name, who(&r, true), state))
			problems++
		}
		for _, r := range absent {
			add(c, dev(&Rank{Rank: r, Pid: -1}), timeline.StatusTimeout, timeline.AlertRankMissing, timeline.KindAlert,
				fmt.Sprintf("%s: rank %d is in neither its ranks nor its missing ranks (another rank is listed twice in its place): not heard from", name, r))
			problems++
		}
		if seen := len(c.Ranks) + len(c.Missing) + len(absent); !c.text && seen < c.Size {
			add(c, timeline.NoDevice, timeline.StatusError, timeline.AlertCommIncomplete, timeline.KindAlert,
				fmt.Sprintf("%s: only %d of its ranks are known to RAS (%d answered, %d missing): the others never joined (INCOMPLETE)", name, seen, len(c.Ranks), len(c.Missing)))
			problems++
		}
		for _, r := range c.Ranks {
			var errs []string
			if r.Status.InitState != 0 {
				errs = append(errs, "init state "+strings.Replace(resultText(r.Status.InitState), "(ncclResult)", "(ncclResult, not success)", 1))
			}
			if r.Status.AsyncError != 0 {
				errs = append(errs, "asynchronous error "+resultText(r.Status.AsyncError))
			}
			if r.Status.Abort {
				errs = append(errs, "aborted")
			}
			if len(errs) > 0 {
				add(c, dev(&r), timeline.StatusError, timeline.AlertRankError, timeline.KindAlert, fmt.Sprintf("%s: %s: %s", name, who(&r, false), strings.Join(errs, ", ")))
				problems++
			}
		}
		for _, m := range mismatches(c) {
			add(c, dev(m.behind[0]), timeline.StatusTimeout, timeline.AlertCountMismatch, timeline.KindAlert, name+": "+m.String())
			// Which collective, and how far behind the rank named is: the diagnosis tells a count
			// that lagged by one from a rank that never entered the collective (CountBehind).
			op, _ := timeline.ParseCollOp(m.op)
			im.Events[len(im.Events)-1].Aux = timeline.PackCountBehind(op, m.most-m.behind[0].Counts[m.op])
			problems++
		}
		if problems == 0 {
			add(c, timeline.NoDevice, timeline.StatusOK, 0, timeline.KindMark,
				fmt.Sprintf("%s: all %d ranks answered, no errors, collective counts agree", name, answered(c)))
		}
	}
}

// dedupe leaves out of c each listing of a rank after its first (in ranks, then missing_ranks),
// with a warning naming the file, the communicator and the rank, and returns the ranks then
// absent from both lists when they are as many as the listings left out: the duplicates took
// their places, so they are the ones RAS did not hear from. (More absent ranks than duplicates is
// a communicator RAS saw incomplete, told as such.)
func dedupe(c *Comm, path string, im *kineto.Imported) []int {
	seen := make(map[int]bool, len(c.Ranks)+len(c.Missing))
	dups := 0
	keep := func(list []Rank, field string) []Rank {
		out := list[:0:0]
		for i, r := range list {
			if r.Rank < 0 { // ranks the text status counts without naming
				out = append(out, r)
				continue
			}
			if seen[r.Rank] {
				dups++
				if dups <= 20 {
					im.Warnings = append(im.Warnings, fmt.Sprintf("%s: communicator %s: %s[%d] lists rank %d again: left out (one record per rank)", path, c.Hash, field, i, r.Rank))
				}
				continue
			}
			seen[r.Rank] = true
			out = append(out, r)
		}
		return out
	}
	if c.Ranks, c.Missing = keep(c.Ranks, "ranks"), keep(c.Missing, "missing_ranks"); dups == 0 {
		return nil
	}
	if dups > 20 {
		im.Warnings = append(im.Warnings, fmt.Sprintf("%s: communicator %s: %d ranks listed more than once in all", path, c.Hash, dups))
	}
	if c.Size-len(seen) != dups {
		return nil
	}
	absent := make([]int, 0, dups)
	for r := 0; r < c.Size && len(absent) < dups; r++ {
		if !seen[r] {
			absent = append(absent, r)
		}
	}
	return absent
}

type procKey struct {
	host string
	pid  int64
}

// worldRanks maps each process to its rank in the widest communicator.
func worldRanks(doc *Doc) map[procKey]int32 {
	best := widest(doc)
	out := map[procKey]int32{}
	if best < 0 {
		return out
	}
	c := &doc.Comms[best]
	for _, rs := range [][]Rank{c.Ranks, c.Missing} {
		for _, r := range rs {
			if r.Rank < 0 || r.Pid < 0 {
				continue // a process not known (NCCL's -1) matches no other
			}
			out[procKey{r.Host, r.Pid}] = int32(r.Rank)
		}
	}
	return out
}

// widest is the index of doc's widest communicator (the first of the widest), -1 when it has none.
func widest(doc *Doc) int {
	best := -1
	for i := range doc.Comms {
		if best < 0 || doc.Comms[i].Size > doc.Comms[best].Size {
			best = i
		}
	}
	return best
}

// mismatch is one collective whose count some ranks of a communicator are behind in.
type mismatch struct {
	op     string
	most   uint64
	ahead  int
	behind []*Rank
}

func (m mismatch) String() string {
	parts := make([]string, 0, len(m.behind))
	for _, r := range m.behind {
		if r.Rank < 0 {
			parts = append(parts, fmt.Sprintf("%d ranks not named by ncclras's text at %d", r.Count, r.Counts[m.op]))
			continue
		}
		parts = append(parts, fmt.Sprintf("rank %d (%s pid %d) at %d", r.Rank, r.Host, r.Pid, r.Counts[m.op]))
	}
	return fmt.Sprintf("%s counts disagree (MISMATCH): %d ranks at %d; behind: %s — they have not entered the %s the others are in",
		m.op, m.ahead, m.most, strings.Join(parts, ", "), m.op)
}

// mismatches lists, per collective, the ranks whose count is below the highest.
func mismatches(c *Comm) []mismatch {
	if c.text {
		return textMismatches(c)
	}
	ops := map[string]bool{}
	for _, r := range c.Ranks {
		for op := range r.Counts {
			ops[op] = true
		}
	}
	names := make([]string, 0, len(ops))
	for op := range ops {
		names = append(names, op)
	}
	sort.Strings(names)
	var out []mismatch
	for _, op := range names {
		m := mismatch{op: op}
		for _, r := range c.Ranks {
			m.most = max(m.most, r.Counts[op])
		}
		for i := range c.Ranks {
			r := &c.Ranks[i]
			if r.Counts[op] < m.most {
				m.behind = append(m.behind, r)
			} else {
				m.ahead++
			}
		}
		if len(m.behind) > 0 {
			out = append(out, m)
		}
	}
	return out
}

// textMismatches lists the mismatches the text status tells, per collective as it groups the
// counts: the ranks it names, and a record for each group's unnamed rest.
func textMismatches(c *Comm) []mismatch {
	named := make(map[int]*Rank, len(c.Ranks))
	for i := range c.Ranks {
		if c.Ranks[i].Rank >= 0 {
			named[c.Ranks[i].Rank] = &c.Ranks[i]
		}
	}
	names := make([]string, 0, len(c.counted))
	for op := range c.counted {
		names = append(names, op)
	}
	sort.Strings(names)
	var out []mismatch
	for _, op := range names {
		m := mismatch{op: op}
		for _, g := range c.counted[op] {
			m.most = max(m.most, g.value)
		}
		for _, g := range c.counted[op] {
			if g.value == m.most {
				m.ahead += g.n
				continue
			}
			for _, r := range g.ranks {
				m.behind = append(m.behind, named[r])
			}
			if rest := g.n - len(g.ranks); rest > 0 {
				m.behind = append(m.behind, &Rank{Rank: -1, Count: rest, Pid: -1, Counts: map[string]uint64{op: g.value}})
			}
		}
		sort.SliceStable(m.behind, func(a, b int) bool { return m.behind[a].Rank >= 0 && m.behind[b].Rank < 0 })
		if len(m.behind) > 0 {
			out = append(out, m)
		}
	}
	return out
}

// answered is how many of c's ranks answered RAS.
func answered(c *Comm) int {
	if c.text {
		return c.answered
	}
	return len(c.Ranks)
}

// who names a rank in a finding: its number, host, pid (and GPU), or, for ranks the text status
// counts without naming, how many.
func who(r *Rank, gpu bool) string {
	switch {
	case r.Rank < 0:
		return fmt.Sprintf("%d ranks not named by ncclras's text", r.Count)
	case gpu:
		return fmt.Sprintf("rank %d on %s pid %d GPU %d", r.Rank, r.Host, r.Pid, r.Dev)
	}
	return fmt.Sprintf("rank %d on %s pid %d", r.Rank, r.Host, r.Pid)
}
