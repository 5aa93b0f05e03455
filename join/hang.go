package join

import (
	"slices"

	"github.com/xfertop/xfertop/timeline"
)

// maxOpenPostings bounds the collectives waiting for their other ranks; past it the oldest is forgotten.
const maxOpenPostings = 8192

// maxWaits bounds the waits one look at the postings reports.
const maxWaits = 1 << 16

// posting is one collective as its ranks post it: which ranks of its communicator have, when, and
// on which of the session's streams.
type posting struct {
	id     uint64
	op     timeline.CollOp
	seq    uint32 // the source's sequence number on the communicator, from 0
	comm   uint32
	nranks int
	ranks  []uint64 // bit set of communicator ranks that posted it
	posts  []post
}

type post struct {
	rank   int32 // in the communicator
	at     int64 // session ns
	stream uint32
}

// postings is what PyTorch's Flight Recorder records, asked live: which collective has been posted
// by some of its ranks and not the others, since when. It makes no verdict: those ranks wait for
// their peers (Waits), and the diagnosis (analysis/diagnosis) judges from the waits, as it does the
// engine's, whether that is a hang and which ranks never entered it.
type postings struct {
	open  map[uint64]*posting
	order []uint64
}

func newPostings() *postings { return &postings{open: map[uint64]*posting{}} }

// posted counts a rank's posting mark at session time now (ns): Op the collective, Peer its rank in
// the communicator, Ranks the communicator's size, Aux the sequence number, Stream the session's
// stream.
func (h *postings) posted(e *timeline.Event, now int64) {
	if e.Ranks < 2 || e.Peer < 0 || int(e.Peer) >= int(e.Ranks) {
		return
	}
	p := h.open[e.Op]
	if p == nil {
		p = &posting{id: e.Op, op: timeline.CollOp(e.Sub), seq: e.Aux, comm: e.Comm, nranks: int(e.Ranks), ranks: make([]uint64, (int(e.Ranks)+63)/64)}
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
	if p.ranks[w]&b != 0 {
		return
	}
	p.ranks[w] |= b
	p.posts = append(p.posts, post{rank: e.Peer, at: now, stream: e.Stream})
	if len(p.posts) >= p.nranks {
		delete(h.open, e.Op) // every rank entered it: it runs
	}
}

// waiting reports whether some rank has posted op and some other not yet.
func (h *postings) waiting(op uint64) bool { return h.open[op] != nil }

// Waits appends to dst, for each collective posted by some of its ranks and not the others, each
// posted rank's wait for its peers: a peer wait (Sub the collective) from its posting to now
// (session ns), with status (timeline.StatusOK while the job runs; StatusTimeout when the job
// ended with it still waiting), Aux the collective's sequence number counted from 1, and returns
// dst.
func (j *Join) Waits(dst []timeline.Event, now int64, status uint8) []timeline.Event {
	n := 0
	for _, id := range j.hang.order {
		p := j.hang.open[id]
		if p == nil {
			continue
		}
		for _, ps := range p.posts {
			if n++; n > maxWaits {
				return dst
			}
			dst = append(dst, timeline.Event{Kind: timeline.KindPeerWait, Sub: uint8(p.op), Start: ps.at, End: max(now, ps.at), Queued: ps.at,
				Device: j.device(p.comm, ps.rank), Peer: timeline.NoDevice, Stream: ps.stream, Op: p.id, Comm: p.comm,
				Ranks: uint16(min(p.nranks, 1<<16-1)), Status: status, Aux: p.seq + 1})
		}
	}
	return dst
}
