package engine

import (
	"encoding/binary"
	"slices"
)

// Communicator is a group of devices that can run collectives and send/receive together.
type Communicator struct {
	ID      uint32
	Devices []DeviceID // in rank order
	key     string
	lastUse uint64
	uses    int
}

// CommCacheStats counts what the communicator cache did.
type CommCacheStats struct {
	Entries   int
	Hits      int
	Misses    int
	Evictions int
	Faults    int // communicators evicted because they reported an error
}

// CommCache keeps communicators keyed by the sorted set of their global device ids, so a transfer
// between the same devices reuses one instead of paying creation again. It is bounded: past
// Capacity entries the least recently used one is evicted. With Capacity 0 nothing is kept and every
// lookup creates a communicator (what a runtime without a cache does).
type CommCache struct {
	Capacity int
	entries  map[string]*Communicator
	clock    uint64
	nextID   uint32
	stats    CommCacheStats
	retired  []*Communicator // with the cache off: communicators replaced, for TakeRetired
	// scratch for a lookup's key: a hit allocates nothing, and sorting costs n log n, not n²
	sorted []DeviceID
	keyBuf []byte
}

// key returns the canonical key of a device set, its sorted ids as uvarints, in a buffer reused by
// the next call.
func (c *CommCache) key(devs []DeviceID) []byte {
	c.sorted = append(c.sorted[:0], devs...)
	if !slices.IsSorted(c.sorted) {
		slices.Sort(c.sorted)
	}
	b := c.keyBuf[:0]
	for _, d := range c.sorted {
		b = binary.AppendUvarint(b, uint64(d))
	}
	c.keyBuf = b
	return b
}

// NewCommCache returns an empty cache holding at most capacity communicators.
func NewCommCache(capacity int) *CommCache {
	return &CommCache{Capacity: capacity, entries: map[string]*Communicator{}}
}

// Get returns the communicator for devs. created is true when it had to be made (a miss); evicted
// lists communicators dropped to make room, which the caller must destroy.
func (c *CommCache) Get(devs []DeviceID) (comm *Communicator, created bool, evicted []*Communicator) {
	k := c.key(devs)
	c.clock++
	if e, ok := c.entries[string(k)]; ok && c.Capacity > 0 {
		e.lastUse = c.clock
		e.uses++
		c.stats.Hits++
		return e, false, nil
	}
	c.stats.Misses++
	c.nextID++
	key := string(k)
	comm = &Communicator{ID: c.nextID, Devices: append([]DeviceID(nil), devs...), key: key, lastUse: c.clock, uses: 1}
	if c.Capacity <= 0 {
		// No cache: the previous communicator for these devices is done with and replaced. It is
		// retired (the caller destroys it), not evicted: a cache that is off evicts nothing.
		if old, ok := c.entries[key]; ok {
			c.retired = append(c.retired, old)
		}
		c.entries[key] = comm
		return comm, true, nil
	}
	for len(c.entries) >= c.Capacity {
		var lru *Communicator
		for _, e := range c.entries {
			if lru == nil || e.lastUse < lru.lastUse {
				lru = e
			}
		}
		delete(c.entries, lru.key)
		c.stats.Evictions++
		evicted = append(evicted, lru)
	}
	c.entries[key] = comm
	return comm, true, evicted
}

// TakeRetired returns the communicators a cache that is off has replaced since the last call,
// which the caller must destroy. They are not evictions: nothing was cached.
func (c *CommCache) TakeRetired() []*Communicator {
	r := c.retired
	c.retired = nil
	return r
}

// Fault evicts comm because it reported an error; the next Get for its devices creates a fresh one.
// It returns false when comm was no longer cached.
func (c *CommCache) Fault(comm *Communicator) bool {
	if e, ok := c.entries[comm.key]; ok && e == comm {
		delete(c.entries, comm.key)
		c.stats.Evictions++
		c.stats.Faults++
		return true
	}
	return false
}

// Lookup returns the cached communicator with id, or nil when it is no longer cached.
func (c *CommCache) Lookup(id uint32) *Communicator {
	for _, e := range c.entries {
		if e.ID == id {
			return e
		}
	}
	return nil
}

// Stats returns the cache's counters.
func (c *CommCache) Stats() CommCacheStats {
	s := c.stats
	s.Entries = len(c.entries)
	return s
}
