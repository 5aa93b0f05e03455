package inspector

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/xfertop/xfertop/units"
)

// part is one file as read on its own, before it joins the others.
type part struct {
	path string
	st   *state
}

// fatal reports whether a file's error stops the whole import: a bound passed, the import
// cancelled, a file that cannot be opened or read. Any other (a damaged line, a log of another
// format) leaves that file out and the rest are read, as Flight Recorder's cut dumps are.
func fatal(err error) bool {
	var le *LimitError
	var pe *fs.PathError
	return errors.As(err, &le) || errors.As(err, &pe) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// foreignParts finds the files of another job: a file is when a communicator it reports on has
// another size there than more of the other files say (a 16-rank job's log among a 1,024-rank
// job's that share its id). It returns why, by the part's index.
func foreignParts(parts []part) map[int]string {
	count := map[string]map[int]int{} // communicator id → its size → files saying so
	for _, p := range parts {
		for _, c := range p.st.comms {
			if count[c.id] == nil {
				count[c.id] = map[int]int{}
			}
			count[c.id][c.nranks]++
		}
	}
	out := map[int]string{}
	for i, p := range parts {
		for _, c := range p.st.comms {
			sizes := count[c.id]
			if len(sizes) < 2 {
				continue
			}
			most, n := 0, 0
			for s, k := range sizes {
				if k > n || (k == n && s < most) {
					most, n = s, k
				}
			}
			if n > sizes[c.nranks] {
				out[i] = fmt.Sprintf("%s:%d: communicator %s has %s here, where %s say it has %d: a log of another job? (left out)",
					c.file, c.line, c.id, units.Counted(c.nranks, "rank"), units.Counted(n, "other file"), most)
				break
			}
		}
	}
	return out
}

// merge adds one file's operations, processes and communicators to st. Two processes holding one
// rank of one communicator (a log of a rank twice, from a restarted process or another job) are
// an error naming both files: merged, the job would have a rank too many.
func (st *state) merge(p *state) error {
	procs := make([]int32, len(p.procs))
	for i, pr := range p.procs {
		idx, err := st.process(pr.name, 1, pr.host, pr.pid)
		if err != nil {
			return err
		}
		procs[i] = idx
	}
	comms := make([]uint32, len(p.comms)+1)
	for i, c := range p.comms {
		id, err := st.comm(c.file, c.line, &header{ID: c.id, CommName: c.name, NRanks: c.nranks})
		if err != nil {
			return err
		}
		comms[i+1] = id
	}
	for _, r := range p.recs {
		r.proc, r.comm = procs[r.proc], comms[r.comm]
		c := &st.comms[r.comm-1]
		k := commRankKey{r.comm, r.rank}
		if prev, ok := st.ranks[k]; ok && prev != r.proc && !strings.HasPrefix(c.id, "prom:") {
			a, b := st.procs[prev], st.procs[r.proc]
			return fmt.Errorf("%s and %s both hold rank %d of communicator %s (%s pid %d and %s pid %d): one rank's log twice, from a restarted process or another job",
				b.name, a.name, r.rank, c.id, b.host, b.pid, a.host, a.pid)
		}
		st.note(r.proc, r.comm, r.rank, c.nranks)
		st.recs = append(st.recs, r)
	}
	for v, n := range p.versions {
		st.versions[v] += n
	}
	for _, w := range p.warn.list {
		st.warn.add(w)
	}
	st.dropped += p.dropped
	st.proxy += p.proxy
	st.prom += p.prom
	return nil
}

// sortedKeys is m's keys in order.
func sortedKeys(m map[int]string) []int {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	return ks
}
