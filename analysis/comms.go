package analysis

import (
	"encoding/json"
	"slices"

	"github.com/xfertop/xfertop/timeline"
)

// MaxCommsKept bounds the communicators listed; the oldest evicted ones are forgotten first.
const MaxCommsKept = 4096

type commInfo struct {
	id      uint32
	devices []int32 // from the ranks' comm_init events
	created int64
	initNs  int64
	hits    int64
	evicted bool
	faulted bool
	inited  bool
	pending int64 // hits before its creation was reported
}

// comms folds the communicator cache's events (comm_init per rank: a miss, its interval the
// creation cost; comm_hit; comm_evict) and NCCL group launches.
type comms struct {
	seen                    bool  // the source records communicators (recordsComms), or one was seen
	from                    int64 // the analysis starts here (StartAt): creations before it are unseen
	byID                    map[uint32]*commInfo
	hits, misses, evictions int64
	initNs                  int64 // Σ over communicators of the slowest rank's creation
	launches, groupOps      int64
}

func newComms() *comms { return &comms{byID: map[uint32]*commInfo{}} }

// recordsComms says whether a stream's source reports every communicator it creates, finds in its
// cache or evicts, and every group launch: xfertop's engine (backends sim and cuda) and NCCL's
// profiler (nccl). There, no such event means none happened; a trace records none of them, and
// the cache is unknown unless one turns up.
func recordsComms(m timeline.Meta) bool {
	switch m.Backend {
	case "sim", "cuda", "nccl":
		return true
	}
	return false
}

func (c *comms) get(id uint32, at int64) *commInfo {
	ci := c.byID[id]
	if ci == nil {
		ci = &commInfo{id: id, created: at}
		c.byID[id] = ci
		if len(c.byID) > MaxCommsKept {
			c.forget()
		}
	}
	return ci
}

// forget drops the oldest evicted communicator (or the oldest, when none was evicted).
func (c *comms) forget() {
	var victim *commInfo
	for _, ci := range c.byID {
		if victim == nil || (ci.evicted && !victim.evicted) || (ci.evicted == victim.evicted && ci.created < victim.created) {
			victim = ci
		}
	}
	delete(c.byID, victim.id)
}

func (c *comms) add(e *timeline.Event) {
	switch e.Kind {
	case timeline.KindCommInit, timeline.KindCommHit, timeline.KindCommEvict, timeline.KindGroupLaunch:
		c.seen = true
	}
	switch e.Kind {
	case timeline.KindCommInit:
		ci := c.get(e.Comm, e.Start)
		if !ci.inited {
			ci.inited = true
			c.misses++
			c.hits += ci.pending
			ci.hits += ci.pending
			ci.pending = 0
		}
		if e.Device >= 0 && !slices.Contains(ci.devices, e.Device) {
			i, _ := slices.BinarySearch(ci.devices, e.Device)
			ci.devices = slices.Insert(ci.devices, i, e.Device)
		}
		if d := e.Dur(); d > ci.initNs {
			c.initNs += d - ci.initNs
			ci.initNs = d
		}
	case timeline.KindCommHit:
		// A creation is reported when it ends, after the lookups that found it under way (a
		// runtime queues a step's work at once): those count as hits once the miss that created it
		// is in, so that the cache never reads 100% hits while its communicators are being made.
		// From a later start, the creation may lie before it, unseen: a hit counts at once.
		ci := c.get(e.Comm, e.Start)
		if !ci.inited && c.from == 0 {
			ci.pending++
			return
		}
		c.hits++
		ci.hits++
	case timeline.KindCommEvict:
		c.evictions++
		ci := c.get(e.Comm, e.Start)
		ci.evicted = true
		ci.faulted = e.Status == timeline.StatusFaulted
	case timeline.KindGroupLaunch:
		c.launches++
		c.groupOps += int64(e.Aux)
	}
}

// Comm is one communicator seen in the cache's events; Devices are its ranks' global device ids.
type Comm struct {
	ID        uint32  `json:"id"`
	Devices   []int32 `json:"devices"`
	CreatedNs int64   `json:"created_ns"`
	InitNs    int64   `json:"init_ns"`
	Hits      int64   `json:"hits"`
	Evicted   bool    `json:"evicted"`
	Faulted   bool    `json:"faulted"`
}

// CommCache is what the communicator cache did. A communicator's creation cost is its slowest rank's.
// Known says whether the stream records the cache at all: a trace (Kineto, Nsight Systems) has
// no communicator events, and its figures are unknown, written null in JSON, not 0.
type CommCache struct {
	Known       bool   `json:"-"`
	Hits        int64  `json:"hits"`
	Misses      int64  `json:"misses"`
	Evictions   int64  `json:"evictions"`
	InitNsTotal int64  `json:"init_ns_total"`
	Comms       []Comm `json:"-"`
}

// MarshalJSON writes every figure null when the stream does not record the cache.
func (c CommCache) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Hits        *int64 `json:"hits"`
		Misses      *int64 `json:"misses"`
		Evictions   *int64 `json:"evictions"`
		InitNsTotal *int64 `json:"init_ns_total"`
	}{ifKnown(c.Known, c.Hits), ifKnown(c.Known, c.Misses), ifKnown(c.Known, c.Evictions), ifKnown(c.Known, c.InitNsTotal)})
}

// Groups counts NCCL-style group launches and the ops they fused. Known is CommCache's: whether
// the stream records them.
type Groups struct {
	Known    bool  `json:"-"`
	Launches int64 `json:"launches"`
	Ops      int64 `json:"ops"`
}

// MarshalJSON writes both counts null when the stream does not record groups.
func (g Groups) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Launches *int64 `json:"launches"`
		Ops      *int64 `json:"ops"`
	}{ifKnown(g.Known, g.Launches), ifKnown(g.Known, g.Ops)})
}

// ifKnown is &v when known, else nil (null in JSON).
func ifKnown(known bool, v int64) *int64 {
	if !known {
		return nil
	}
	return &v
}

func (c *comms) result() (CommCache, Groups) {
	out := CommCache{Known: c.seen, Hits: c.hits, Misses: c.misses, Evictions: c.evictions, InitNsTotal: c.initNs, Comms: make([]Comm, 0, len(c.byID))}
	for _, ci := range c.byID {
		if !ci.inited && ci.pending > 0 && !ci.evicted {
			continue // being created: listed once its creation is reported
		}
		out.Comms = append(out.Comms, Comm{ID: ci.id, Devices: slices.Clone(ci.devices), CreatedNs: ci.created, InitNs: ci.initNs,
			Hits: ci.hits, Evicted: ci.evicted, Faulted: ci.faulted})
	}
	slices.SortFunc(out.Comms, func(a, b Comm) int { return int(int64(a.ID) - int64(b.ID)) })
	return out, Groups{Known: c.seen, Launches: c.launches, Ops: c.groupOps}
}
