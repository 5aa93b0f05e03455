package analysis

import (
	"cmp"
	"slices"

	"github.com/xfertop/xfertop/timeline"
)

// Communicator is a communicator or process group a source names without recording a cache of
// them: PyTorch Flight Recorder's process groups, NCCL RAS's communicators. Unlike Comm (an entry
// of the engine's or NCCL's communicator cache), its creation and hits are unknown; what is known
// is its name, its size, the ranks known to be in it, and the ranks its source found in trouble.
type Communicator struct {
	ID    uint32 `json:"id"`
	Name  string `json:"name"`
	Ranks int    `json:"ranks"` // its size; 0: unknown
	// Members are the global ranks known to be in it, sorted: those whose dump names it (Flight
	// Recorder), or those RAS said something about.
	Members []int32 `json:"members"`
	// The ranks its source found in trouble, sorted (NCCL RAS's causes, timeline.AlertRankDead…).
	Dead    []int32 `json:"dead,omitempty"`    // no keep-alive
	Missing []int32 `json:"missing,omitempty"` // did not answer
	Failing []int32 `json:"failing,omitempty"` // reported an error, an abort or a failed init
	Behind  []int32 `json:"behind,omitempty"`  // behind their peers' collective counts
	// Incomplete: fewer of its ranks are known to its source than its size (some never joined).
	Incomplete bool `json:"incomplete,omitempty"`
	// Unheard counts the ranks in it the source has nothing from, where its members name
	// themselves (a Flight Recorder dump per rank: a rank without a dump); which ranks they are is
	// not known. 0 where the source names no members (NCCL RAS: its trouble lists say who).
	Unheard int   `json:"unheard,omitempty"`
	FirstNs int64 `json:"first_ns"` // when it was first named
}

// maxCommMembers bounds the ranks kept per communicator and per trouble list: more than any job's
// world, so that a communicator's state stays small whatever a source sends.
const maxCommMembers = 1 << 16

// namedComm is a Communicator as it is folded: the name is a label, resolved in the result.
type namedComm struct {
	c     Communicator
	label uint32
	selfs int // ranks that named themselves members
}

// named folds the events that name a communicator: a membership mark (timeline.SeqOp with
// sequence 0 in a mark: the device, when there is one, is a member; its label names it) and the
// alerts a source raises with a cause about a rank of a communicator.
type named struct {
	byID map[uint32]*namedComm
}

func (n *named) add(e *timeline.Event) {
	if e.Comm == 0 {
		return
	}
	switch e.Kind {
	case timeline.KindMark:
		if seq, ok := e.OpSeq(); !ok || seq != 0 {
			return
		}
		nc := n.get(e)
		if nc == nil {
			return
		}
		if nc.label == 0 {
			nc.label = e.Label
		}
		if e.Device >= 0 {
			n := len(nc.c.Members)
			if nc.c.Members = insertRank(nc.c.Members, e.Device); len(nc.c.Members) > n {
				nc.selfs++
			}
		}
	case timeline.KindAlert:
		if e.Sub == 0 || e.Sub > timeline.AlertCommIncomplete {
			return // a watchdog's or an error's alert, about an op, not the communicator's ranks
		}
		nc := n.get(e)
		if nc == nil {
			return
		}
		var list *[]int32
		switch e.Sub {
		case timeline.AlertRankDead:
			list = &nc.c.Dead
		case timeline.AlertRankMissing:
			list = &nc.c.Missing
		case timeline.AlertRankError:
			list = &nc.c.Failing
		case timeline.AlertCountMismatch:
			list = &nc.c.Behind
		case timeline.AlertCommIncomplete:
			nc.c.Incomplete = true
		}
		if list != nil && e.Device >= 0 {
			*list = insertRank(*list, e.Device)
			nc.c.Members = insertRank(nc.c.Members, e.Device)
		}
	}
}

// get returns the communicator e names, made on its first sighting; nil once MaxCommsKept are
// known (a source naming more is not a job's).
func (n *named) get(e *timeline.Event) *namedComm {
	nc := n.byID[e.Comm]
	if nc == nil {
		if n.byID == nil {
			n.byID = map[uint32]*namedComm{}
		}
		if len(n.byID) >= MaxCommsKept {
			return nil
		}
		nc = &namedComm{c: Communicator{ID: e.Comm, FirstNs: e.Start}}
		n.byID[e.Comm] = nc
	}
	nc.c.Ranks = max(nc.c.Ranks, int(e.Ranks))
	return nc
}

// insertRank adds r to the sorted list rs, once, up to maxCommMembers.
func insertRank(rs []int32, r int32) []int32 {
	i, found := slices.BinarySearch(rs, r)
	if found || len(rs) >= maxCommMembers {
		return rs
	}
	return slices.Insert(rs, i, r)
}

// result lists the named communicators by id, their names resolved by labels.
func (n *named) result(labels Labels) []Communicator {
	if len(n.byID) == 0 {
		return nil
	}
	out := make([]Communicator, 0, len(n.byID))
	for _, nc := range n.byID {
		c := nc.c
		if nc.selfs > 0 && c.Ranks > nc.selfs {
			c.Unheard = c.Ranks - nc.selfs
		}
		if labels != nil && nc.label != 0 {
			c.Name = labels.Lookup(nc.label)
		}
		c.Members, c.Dead, c.Missing = slices.Clone(c.Members), slices.Clone(c.Dead), slices.Clone(c.Missing)
		c.Failing, c.Behind = slices.Clone(c.Failing), slices.Clone(c.Behind)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Communicator) int { return cmp.Compare(a.ID, b.ID) })
	return out
}
