package join

import (
	"slices"
	"time"

	"github.com/xfertop/xfertop/timeline"
)

// DefaultHangTimeout is how long a collective may be posted on some ranks and not others before
// the console raises a hang alert.
const DefaultHangTimeout = 30 * time.Second

// maxOpenPostings bounds the collectives waiting for their other ranks; past it the oldest is forgotten.
const maxOpenPostings = 8192

// posting is one collective as its ranks post it: which ranks of its communicator have.
type posting struct {
	id      uint64
	op      timeline.CollOp
	seq     uint32
	comm    uint32
	nranks  int
	ranks   []uint64 // bit set of communicator ranks that posted it
	n       int
	first   int64 // session ns when the first rank posted it
	alerted bool
}

// hangs is PyTorch Flight Recorder's question asked live: which collective has been posted by some
// of its ranks and not the others, for longer than a timeout? One alert per communicator until it
// moves again (the collectives queued behind a hang are the same hang).
type hangs struct {
	timeout time.Duration
	open    map[uint64]*posting
	order   []uint64
	stuck   map[uint32]bool // communicators with a hang alert not yet resolved
}

// hang is a due alert: the collective and its ranks, posted and missing.
type hang struct {
	id      uint64
	op      timeline.CollOp
	seq     uint32
	comm    uint32
	nranks  int
	posted  []int32
	missing []int32
	waited  time.Duration
}

func newHangs(timeout time.Duration) *hangs {
	return &hangs{timeout: timeout, open: map[uint64]*posting{}, stuck: map[uint32]bool{}}
}

// posted counts a rank's posting mark at session time now (ns): Op the collective, Peer its rank in
// the communicator, Ranks the communicator's size, Aux the sequence number.
func (h *hangs) posted(e *timeline.Event, now int64) {
	if h.timeout < 0 || e.Ranks < 2 || e.Peer < 0 || int(e.Peer) >= int(e.Ranks) {
		return
	}
	p := h.open[e.Op]
	if p == nil {
		p = &posting{id: e.Op, op: timeline.CollOp(e.Sub), seq: e.Aux, comm: e.Comm, nranks: int(e.Ranks),
			ranks: make([]uint64, (int(e.Ranks)+63)/64), first: now}
		h.open[e.Op] = p
		h.order = append(h.order, e.Op)
		for len(h.open) > maxOpenPostings && len(h.order) > 0 {
			delete(h.open, h.order[0])
			h.order = h.order[1:]
		}
		if len(h.order) > 4*maxOpenPostings {
			h.order = slices.DeleteFunc(h.order, func(id uint64) bool { _, ok := h.open[id]; return !ok })
		}
	}
	w, b := e.Peer/64, uint64(1)<<(e.Peer%64)
	if p.ranks[w]&b == 0 {
		p.ranks[w] |= b
		p.n++
	}
	if p.n >= p.nranks {
		delete(h.open, e.Op)
		delete(h.stuck, p.comm) // the communicator moves again
	}
}

// due returns the postings that have waited longer than the timeout at session time now (ns), once
// each.
func (h *hangs) due(now int64) []hang {
	if h.timeout < 0 {
		return nil
	}
	var out []hang
	for _, id := range h.order {
		p := h.open[id]
		if p == nil || p.alerted || time.Duration(now-p.first) < h.timeout {
			continue
		}
		p.alerted = true
		if h.stuck[p.comm] {
			continue
		}
		h.stuck[p.comm] = true
		hg := hang{id: p.id, op: p.op, seq: p.seq, comm: p.comm, nranks: p.nranks, waited: time.Duration(now - p.first)}
		for r := 0; r < p.nranks; r++ {
			if p.ranks[r/64]&(1<<(r%64)) != 0 {
				hg.posted = append(hg.posted, int32(r))
			} else {
				hg.missing = append(hg.missing, int32(r))
			}
		}
		out = append(out, hg)
	}
	return out
}
