package receiver

import (
	"bytes"
	"testing"

	"google.golang.org/grpc/mem"
)

// countingPool is a buffer pool that counts what it lends and what comes back.
type countingPool struct {
	mem.BufferPool
	got, put int
}

func (p *countingPool) Get(n int) *[]byte { p.got++; return p.BufferPool.Get(n) }
func (p *countingPool) Put(b *[]byte)     { p.put++; p.BufferPool.Put(b) }

// A request that came in several frames is read into one buffer of the pool, whole, and the buffer
// goes back to the pool once the request is released: requests reuse their memory rather than
// allocate their size each.
func TestRequestBufferComesFromThePool(t *testing.T) {
	pool := &countingPool{BufferPool: mem.NewTieredBufferPool(1 << 10)}
	old := requestPool
	requestPool = pool
	t.Cleanup(func() { requestPool = old })
	want := bytes.Repeat([]byte("otlp"), 3000)
	data := mem.BufferSlice{mem.SliceBuffer(want[:5000]), mem.SliceBuffer(want[5000:9000]), mem.SliceBuffer(want[9000:])}
	var raw rawMessage
	if err := (rawCodec{}).Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(raw.bytes(), want) {
		t.Fatalf("the request's bytes: %d of %d, or not the same", len(raw.bytes()), len(want))
	}
	raw.release()
	raw.release() // a second release hands back nothing
	if pool.got != 1 || pool.put != 1 || raw.bytes() != nil {
		t.Errorf("the pool lent %d buffers and got %d back; want 1 and 1", pool.got, pool.put)
	}
}

// The request pool lends buffers of the length asked for, in power-of-two capacities it can take
// back; a request larger than its largest tier gets a buffer of its own.
func TestBytePool(t *testing.T) {
	var p bytePool
	for _, tt := range []struct{ n, cap int }{{0, 1}, {1, 1}, {3, 4}, {1000, 1024}, {1 << 20, 1 << 20}, {1<<20 + 1, 1 << 21}, {1<<26 + 1, 1<<26 + 1}} {
		b := p.Get(tt.n)
		if len(*b) != tt.n || cap(*b) != tt.cap {
			t.Errorf("Get(%d): length %d, capacity %d; want %d, %d", tt.n, len(*b), cap(*b), tt.n, tt.cap)
		}
		p.Put(b)
		if b := p.Get(tt.n); len(*b) != tt.n || cap(*b) < tt.n {
			t.Errorf("Get(%d) after Put: length %d, capacity %d", tt.n, len(*b), cap(*b))
		}
	}
}
