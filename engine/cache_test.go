package engine

import "testing"

func TestCommCacheLRU(t *testing.T) {
	c := NewCommCache(2)
	get := func(devs ...DeviceID) (*Communicator, bool, int) {
		comm, created, ev := c.Get(devs)
		return comm, created, len(ev)
	}
	a, created, _ := get(0, 1)
	if !created {
		t.Fatal("first Get of {0,1} should create")
	}
	if b, created, _ := get(1, 0); created || b != a {
		t.Error("{1,0} should hit the {0,1} entry: the key is the sorted set")
	}
	get(2, 3)
	get(0, 1) // {0,1} is now more recent than {2,3}
	if _, _, ev := get(4, 5); ev != 1 {
		t.Errorf("third set evicted %d; want 1", ev)
	}
	if _, created, _ := get(0, 1); created {
		t.Error("{0,1} was used recently and must have survived; {2,3} was the LRU")
	}
	if _, created, _ := get(2, 3); !created {
		t.Error("{2,3} should have been evicted")
	}
	st := c.Stats()
	if st.Hits != 3 || st.Misses != 4 || st.Evictions != 2 || st.Entries != 2 {
		t.Errorf("stats %+v", st)
	}
}

func TestCommCacheFault(t *testing.T) {
	c := NewCommCache(4)
	a, _, _ := c.Get([]DeviceID{0, 1})
	if !c.Fault(a) {
		t.Fatal("Fault of a cached communicator returned false")
	}
	b, created, _ := c.Get([]DeviceID{0, 1})
	if !created || b == a {
		t.Error("after a fault the next Get must create a fresh communicator")
	}
	if st := c.Stats(); st.Faults != 1 || st.Evictions != 1 {
		t.Errorf("stats %+v; want 1 fault eviction", st)
	}
}

func TestCommCacheDisabled(t *testing.T) {
	c := NewCommCache(0)
	var made []*Communicator
	for range 3 {
		comm, created, evicted := c.Get([]DeviceID{0, 1})
		if !created || len(evicted) != 0 {
			t.Fatalf("Get = created %v, evicted %d; with no cache every Get creates and none evicts", created, len(evicted))
		}
		made = append(made, comm)
	}
	// A cache that is off evicts nothing; the communicators it replaced are retired, to destroy.
	if st := c.Stats(); st.Hits != 0 || st.Misses != 3 || st.Evictions != 0 {
		t.Errorf("stats %+v; want 0 hits, 3 misses, 0 evictions", st)
	}
	if r := c.TakeRetired(); len(r) != 2 || r[0] != made[0] || r[1] != made[1] {
		t.Errorf("retired %v; want the first two communicators", r)
	}
	if r := c.TakeRetired(); len(r) != 0 {
		t.Errorf("retired again %v; want none", r)
	}
}

// The collective memory cache keeps buffers across executions and never frees one in flight, even
// when over capacity.
func TestCollMemNeverFreesInFlight(t *testing.T) {
	m := NewCollMem(1 << 20)
	var freed []int64
	m.onFree = func(_ uint32, b int64) { freed = append(freed, b) }
	a := m.Acquire(1, 1<<20)
	b := m.Acquire(2, 1<<20) // over capacity, but a is in flight
	if len(freed) != 0 {
		t.Fatalf("freed %v while both buffers were in flight", freed)
	}
	if st := m.Stats(); st.Protected == 0 {
		t.Error("want the skipped eviction counted")
	}
	m.Release(a) // a is idle now, and the cache is over capacity: a goes
	if len(freed) != 1 {
		t.Fatalf("freed %v after releasing a; want a freed", freed)
	}
	m.Release(b)
	again := m.Acquire(2, 1<<20-100) // same comm, rounds up to the same size class: reused
	if again != b || m.Stats().Hits != 1 {
		t.Errorf("second execution did not reuse the cached buffer")
	}
}

func TestDeviceRanges(t *testing.T) {
	for _, tc := range []struct {
		devs []DeviceID
		want string
	}{
		{nil, ""},
		{[]DeviceID{4, 0}, "0,4"},
		{[]DeviceID{7, 6, 5, 4, 3, 2, 1, 0}, "0-7"},
		{[]DeviceID{0, 1, 16, 17, 18, 40}, "0,1,16-18,40"},
		{[]DeviceID{3, 3, 2}, "2,3"},
	} {
		if got := DeviceRanges(tc.devs); got != tc.want {
			t.Errorf("DeviceRanges(%v) = %q; want %q", tc.devs, got, tc.want)
		}
	}
}

// The cache's key does not depend on the order devices are named in, and a reversed 4,096-rank set
// hits the communicator the ascending one made.
func TestCommCacheKeyIsTheSet(t *testing.T) {
	c := NewCommCache(4)
	up := make([]DeviceID, 4096)
	down := make([]DeviceID, 4096)
	for i := range up {
		up[i], down[len(down)-1-i] = DeviceID(i), DeviceID(i)
	}
	a, created, _ := c.Get(up)
	if !created {
		t.Fatal("first lookup was a hit")
	}
	b, created, _ := c.Get(down)
	if created || a != b {
		t.Fatalf("the reversed set made a new communicator (%v, %p vs %p)", created, a, b)
	}
	if _, created, _ := c.Get(up[:4095]); !created {
		t.Fatal("a smaller set hit the larger set's communicator")
	}
}
