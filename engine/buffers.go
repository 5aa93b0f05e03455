package engine

// Buffer is memory on a device or on a host. Def is its definition event: recorded by the stream
// that produces the buffer's contents, so a consumer can wait on the device instead of the host
// (0: the contents are ready).
type Buffer struct {
	ID     uint32
	Kind   MemKind
	Device DeviceID
	Bytes  int64
	Def    EventID
	pooled bool
	free   bool
}

// RecvPoolStats counts what the receive pool did.
type RecvPoolStats struct {
	Slots     int   // preallocated buffers, all devices
	SlotBytes int64 // size of each
	Hits      int   // receives served from the pool
	Misses    int   // receives that had to allocate (pool empty or buffer too large)
	InUse     int
}

// RecvPool holds receive buffers preallocated on each device when the client starts, so receiving
// allocates nothing on the hot path. A receive larger than SlotBytes, or one that finds the pool
// empty, allocates and is counted as a miss.
type RecvPool struct {
	slotBytes int64
	free      [][]*Buffer // per device
	stats     RecvPoolStats
	nextID    *uint32
}

func newRecvPool(devices, slots int, slotBytes int64, nextID *uint32) *RecvPool {
	p := &RecvPool{slotBytes: slotBytes, free: make([][]*Buffer, devices), nextID: nextID}
	for d := range devices {
		for range slots {
			*nextID++
			p.free[d] = append(p.free[d], &Buffer{ID: *nextID, Kind: MemDevice, Device: DeviceID(d), Bytes: slotBytes, pooled: true, free: true})
		}
	}
	p.stats.Slots, p.stats.SlotBytes = devices*slots, slotBytes
	return p
}

// get returns a buffer of at least n bytes on dev and whether it came from the pool.
func (p *RecvPool) get(dev DeviceID, n int64) (*Buffer, bool) {
	fl := p.free[dev]
	if n <= p.slotBytes && len(fl) > 0 {
		b := fl[len(fl)-1]
		p.free[dev] = fl[:len(fl)-1]
		b.free = false
		p.stats.Hits++
		p.stats.InUse++
		return b, true
	}
	p.stats.Misses++
	*p.nextID++
	return &Buffer{ID: *p.nextID, Kind: MemDevice, Device: dev, Bytes: n}, false
}

// Release returns a pooled buffer to its device's pool; other buffers are dropped. Releasing a buffer
// twice is a no-op.
func (p *RecvPool) Release(b *Buffer) {
	if b == nil || !b.pooled || b.free {
		return
	}
	b.free = true
	p.stats.InUse--
	p.free[b.Device] = append(p.free[b.Device], b)
}

// Stats returns the pool's counters.
func (p *RecvPool) Stats() RecvPoolStats { return p.stats }

// CollMemStats counts what the collective memory cache did.
type CollMemStats struct {
	Buffers   int
	Bytes     int64
	Hits      int
	Allocs    int
	Frees     int
	InFlight  int
	Protected int // evictions skipped because the buffer was in flight
}

type collBuf struct {
	key      collKey
	bytes    int64
	inflight int
	lastUse  uint64
}

type collKey struct {
	comm  uint32
	bytes int64
}

// CollMem is the collective memory cache: scratch buffers used by collectives (symmetric across the
// communicator's devices) are kept alive for the whole execution that uses them and reused across
// executions. It is bounded by CapacityBytes: idle buffers are freed least recently used first, and a
// buffer in flight is never freed.
type CollMem struct {
	CapacityBytes int64
	bufs          map[collKey]*collBuf
	clock         uint64
	stats         CollMemStats
	onAlloc       func(comm uint32, bytes int64)
	onFree        func(comm uint32, bytes int64)
}

// NewCollMem returns an empty cache bounded by capacity bytes (per device).
func NewCollMem(capacity int64) *CollMem {
	return &CollMem{CapacityBytes: capacity, bufs: map[collKey]*collBuf{}}
}

func roundPow2(n int64) int64 {
	p := int64(1)
	for p < n {
		p <<= 1
	}
	return p
}

// Acquire returns the scratch buffer for a collective of n bytes on comm, allocating it on first
// use, and marks it in flight until Release.
func (m *CollMem) Acquire(comm uint32, n int64) *collBuf {
	k := collKey{comm, roundPow2(n)}
	m.clock++
	b, ok := m.bufs[k]
	if ok {
		m.stats.Hits++
	} else {
		b = &collBuf{key: k, bytes: k.bytes}
		m.bufs[k] = b
		m.stats.Allocs++
		m.stats.Bytes += b.bytes
		if m.onAlloc != nil {
			m.onAlloc(comm, b.bytes)
		}
	}
	b.inflight++
	m.stats.InFlight++
	b.lastUse = m.clock
	m.trim()
	return b
}

// Release marks one use of b as finished; b stays cached for the next execution.
func (m *CollMem) Release(b *collBuf) {
	if b.inflight > 0 {
		b.inflight--
		m.stats.InFlight--
	}
	m.trim()
}

// trim frees idle buffers, least recently used first, until the cache fits its capacity.
func (m *CollMem) trim() {
	for m.CapacityBytes > 0 && m.stats.Bytes > m.CapacityBytes {
		var lru *collBuf
		for _, b := range m.bufs {
			if b.inflight > 0 {
				continue
			}
			if lru == nil || b.lastUse < lru.lastUse {
				lru = b
			}
		}
		if lru == nil {
			m.stats.Protected++
			return // everything left is in flight: over capacity until something completes
		}
		delete(m.bufs, lru.key)
		m.stats.Bytes -= lru.bytes
		m.stats.Frees++
		if m.onFree != nil {
			m.onFree(lru.key.comm, lru.bytes)
		}
	}
}

// Stats returns the cache's counters.
func (m *CollMem) Stats() CollMemStats {
	s := m.stats
	s.Buffers = len(m.bufs)
	return s
}
