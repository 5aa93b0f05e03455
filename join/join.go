package join

import (
	"fmt"
	"strconv"

	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// PostedLabel labels the instant mark a rank's folder (probes/ncclprof/fold) emits when the rank
// posts a collective: what the hang detector counts (a collective posted on some ranks and not
// others), and what a Join draws as running on the collective's stream until the collective is
// reported ended. It is never one of the session's events.
const PostedLabel = "nccl: collective posted"

// StreamsPerRank spaces the session's stream ids by rank: a rank's stream s becomes
// rank × StreamsPerRank + s, so that "s1003" is stream 3 of rank 1, and the ids do not depend on
// the order in which ranks connect or their events arrive (a live attach and a merged replay of the
// same job number streams alike).
const StreamsPerRank = 1000

// firstSpareStream is where the ids of streams that do not fit that scheme begin.
const firstSpareStream = 1 << 30

// Config describes the session a Join builds.
type Config struct {
	// Strings is the session's string table (a new one when nil).
	Strings *timeline.Strings
	// Epoch is the wall-clock time (Unix ns) of session time 0.
	Epoch int64
	// Clock tells the session time (ns) at which a posting mark is counted: the wall clock for a
	// live job, the mark's own time for a recorded one. The mark's own time when nil.
	Clock func(e *timeline.Event) int64
}

// Join is the one place where the event streams of a job's ranks become one session's stream, live
// (attach.Server) or recorded (MergeRecordings): each rank's clock placed on its wall clock, labels interned in the
// session's table, streams and groups renumbered, hosts indexed, peers and roots translated from
// communicator ranks to job ranks, and posting marks turned into collectives in flight and the
// waits of ranks whose peers have not posted (the diagnosis judges hangs from them). It is not
// safe for concurrent use.
type Join struct {
	cfg    Config
	peers  map[commRank]int32
	hosts  map[string]uint16
	ranks  map[int]*Member
	hang   *postings  // collectives posted by some of their ranks: the others' waits
	open   *openColls // collectives posted and not reported ended: in flight
	spare  uint32     // the last stream id given outside the per-rank scheme
	groups uint32     // the last group id given
	devs   int
}

type commRank struct {
	comm uint32
	rank uint32
}

type devStream struct {
	dev    int32
	stream uint32
}

// Member is one rank process's stream in a Join, as its meta described it.
type Member struct {
	Host string
	Pid  int
	Rank int // the job's rank from the meta; −1 when it did not say
	Name string

	offset  int64
	labels  []uint32
	streams map[devStream]uint32
	groups  map[uint32]uint32
	host    uint16
}

// RankConflictError is two processes of a merged job claiming one rank: their devices would be
// the same.
type RankConflictError struct {
	Rank        int
	Name, Other string // the members' names (a file, a connection)
}

func (e *RankConflictError) Error() string {
	return fmt.Sprintf("%s: rank %d again: %s already is rank %d (two processes of one rank: not one job, or a rank recorded twice)",
		e.Name, e.Rank, e.Other, e.Rank)
}

// New returns a Join building the session cfg describes.
func New(cfg Config) *Join {
	if cfg.Strings == nil {
		cfg.Strings = timeline.NewStrings()
	}
	if cfg.Clock == nil {
		cfg.Clock = func(e *timeline.Event) int64 { return e.Start }
	}
	return &Join{cfg: cfg, peers: map[commRank]int32{}, hosts: map[string]uint16{}, ranks: map[int]*Member{},
		hang: newPostings(), open: newOpenColls(), spare: firstSpareStream, groups: firstSpareStream}
}

// Strings is the session's string table.
func (j *Join) Strings() *timeline.Strings { return j.cfg.Strings }

// Devices is one more than the highest job rank seen so far.
func (j *Join) Devices() int { return j.devs }

// Add takes a rank process's description (its recording or stream meta) and returns its member.
// Another process already holding its rank is a *RankConflictError; the member is returned with it
// (a live console keeps merging, and says so).
func (j *Join) Add(name string, m *recordings.Meta) (*Member, error) {
	mb := &Member{Name: name, Rank: -1, offset: m.EpochUnixNs - j.cfg.Epoch, streams: map[devStream]uint32{}, groups: map[uint32]uint32{}}
	mb.Host = m.Extra["nccl.host"]
	mb.Pid, _ = strconv.Atoi(m.Extra["nccl.pid"])
	if n, err := strconv.Atoi(m.Extra["nccl.rank"]); err == nil && n >= 0 {
		mb.Rank = n
	}
	h, ok := j.hosts[mb.Host]
	if !ok {
		h = uint16(len(j.hosts))
		j.hosts[mb.Host] = h
	}
	mb.host = h
	if mb.Rank < 0 {
		return mb, nil
	}
	if o := j.ranks[mb.Rank]; o != nil && (o.Host != mb.Host || o.Pid != mb.Pid) {
		return mb, &RankConflictError{Rank: mb.Rank, Name: name, Other: o.Name}
	}
	j.ranks[mb.Rank] = mb // the same process again (a reconnection) keeps its rank
	j.devs = max(j.devs, mb.Rank+1)
	return mb, nil
}

// HostNames returns the names of the hosts the ranks joined so far named, by the number their
// events carry (Event sets Host); a rank that named no host is on a host of no name ("").
func (j *Join) HostNames() []string {
	out := make([]string, len(j.hosts))
	for name, h := range j.hosts {
		out[h] = name
	}
	return out
}

// NameHosts sets in extra the names of the hosts the ranks joined so far named
// (timeline.HostNameKey), for the session's description.
func (j *Join) NameHosts(extra map[string]string) {
	for h, name := range j.HostNames() {
		if name != "" {
			extra[timeline.HostNameKey(int32(h))] = name
		}
	}
}

// AddStrings takes the member's next labels (entries 1… of its own table, in order, as they arrive).
func (j *Join) AddStrings(mb *Member, strs []string) {
	for _, s := range strs {
		mb.labels = append(mb.labels, j.cfg.Strings.ID(s))
	}
}

func (mb *Member) label(id uint32) uint32 {
	if id == 0 || int(id) > len(mb.labels) {
		return 0
	}
	return mb.labels[id-1]
}

// Event translates one of the member's events into the session's, in place. It returns false for
// an event that is not the job's: a posting mark, counted for hang detection.
func (j *Join) Event(mb *Member, e *timeline.Event) bool {
	e.Start += mb.offset
	e.End += mb.offset
	if e.Queued >= 0 {
		e.Queued += mb.offset
	}
	e.Label = mb.label(e.Label)
	e.Host = mb.host
	if e.Stream != 0 {
		e.Stream = j.stream(mb, e.Device, e.Stream)
	}
	if e.Group != 0 {
		id, ok := mb.groups[e.Group]
		if !ok {
			j.groups++
			id = j.groups
			mb.groups[e.Group] = id
		}
		e.Group = id
	}
	switch e.Kind {
	case timeline.KindCommInit:
		j.peers[commRank{e.Comm, e.Aux}] = e.Device
		j.devs = max(j.devs, int(e.Device)+1)
	case timeline.KindSend, timeline.KindRecv, timeline.KindCollective, timeline.KindPeerWait:
		e.Peer = j.device(e.Comm, e.Peer)
		if e.Kind == timeline.KindCollective {
			j.open.ended(e)
			j.oneHost(e)
		}
	case timeline.KindMark:
		if j.cfg.Strings.Lookup(e.Label) == PostedLabel {
			j.hang.posted(e, j.cfg.Clock(e))
			j.open.posted(mb, e)
			return false
		}
		e.Peer = j.device(e.Comm, e.Peer)
	}
	return true
}

// oneHost marks a collective timeline.AuxOneHost where the hosts the ranks named show it stays in
// one: every rank joined so far is on one host. Without a topology the analysis takes no op
// between devices to stay in a host (its link is unknown); the ranks' own host names are what tell
// it here. Live, ranks join one by one, and a collective's is marked whichever of its ranks joined
// first (as attach takes every rank to share one host until told otherwise), so that a merge of
// the recordings gives the events attach gave (TestMergeEqualsAttach).
func (j *Join) oneHost(e *timeline.Event) {
	if e.Aux&(timeline.AuxOneHost|timeline.AuxManyHosts) != 0 || len(j.hosts) != 1 || e.Ranks == 0 {
		return
	}
	for h := range j.hosts {
		if h == "" {
			return // a rank that named no host: where it runs is unknown
		}
	}
	e.Aux |= timeline.AuxOneHost
}

// stream is the session's id of a rank's stream: rank × StreamsPerRank + its own id when that
// fits, else the next spare id.
func (j *Join) stream(mb *Member, dev int32, s uint32) uint32 {
	k := devStream{dev, s}
	if id, ok := mb.streams[k]; ok {
		return id
	}
	var id uint32
	if dev >= 0 && s < StreamsPerRank && int64(dev) < (firstSpareStream-StreamsPerRank)/StreamsPerRank {
		id = uint32(dev)*StreamsPerRank + s
	} else {
		j.spare++
		id = j.spare
	}
	mb.streams[k] = id
	return id
}

// device translates a rank in a communicator to the job's rank (device), when known.
func (j *Join) device(comm uint32, rank int32) int32 {
	if rank < 0 {
		return rank
	}
	if d, ok := j.peers[commRank{comm, uint32(rank)}]; ok {
		return d
	}
	return rank
}
