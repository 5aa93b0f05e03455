package analysis

import (
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
}

// comms folds the communicator cache's events (comm_init per rank: a miss, its interval the
// creation cost; comm_hit; comm_evict) and NCCL group launches.
type comms struct {
	byID                    map[uint32]*commInfo
	hits, misses, evictions int64
	initNs                  int64 // Σ over communicators of the slowest rank's creation
	launches, groupOps      int64
}

func newComms() *comms { return &comms{byID: map[uint32]*commInfo{}} }

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
	case timeline.KindCommInit:
		ci := c.get(e.Comm, e.Start)
		if !ci.inited {
			ci.inited = true
			c.misses++
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
		c.hits++
		c.get(e.Comm, e.Start).hits++
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
type CommCache struct {
	Hits        int64  `json:"hits"`
	Misses      int64  `json:"misses"`
	Evictions   int64  `json:"evictions"`
	InitNsTotal int64  `json:"init_ns_total"`
	Comms       []Comm `json:"-"`
}

// Groups counts NCCL-style group launches and the ops they fused.
type Groups struct {
	Launches int64 `json:"launches"`
	Ops      int64 `json:"ops"`
}

func (c *comms) result() (CommCache, Groups) {
	out := CommCache{Hits: c.hits, Misses: c.misses, Evictions: c.evictions, InitNsTotal: c.initNs, Comms: make([]Comm, 0, len(c.byID))}
	for _, ci := range c.byID {
		out.Comms = append(out.Comms, Comm{ID: ci.id, Devices: slices.Clone(ci.devices), CreatedNs: ci.created, InitNs: ci.initNs,
			Hits: ci.hits, Evicted: ci.evicted, Faulted: ci.faulted})
	}
	slices.SortFunc(out.Comms, func(a, b Comm) int { return int(int64(a.ID) - int64(b.ID)) })
	return out, Groups{Launches: c.launches, Ops: c.groupOps}
}
