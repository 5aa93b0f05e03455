package receiver

import (
	"net"
	"sync"
	"sync/atomic"
)

// connCap counts the connections open on the listener's servers, gRPC and HTTP together, and
// refuses those past the cap: a sender that opens connections without end, or many that never
// close, cannot take the file descriptors and memory of the process. A refused connection is
// closed at once (the sender sees it end, retries later) and logged, never left waiting.
type connCap struct {
	max  int64
	open atomic.Int64
	logs *logLimiter
}

// capped is a net.Listener whose connections count against c.
type capped struct {
	net.Listener
	c *connCap
}

// wrap makes x's connections count against the cap.
func (c *connCap) wrap(x net.Listener) net.Listener { return &capped{Listener: x, c: c} }

// Accept returns the next connection under the cap, closing those over it.
func (x *capped) Accept() (net.Conn, error) {
	for {
		conn, err := x.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if n := x.c.open.Add(1); n > x.c.max {
			x.c.open.Add(-1)
			x.c.logs.log("conns", "refused a connection from %s: %d connections are open, the cap (--max-conns)", conn.RemoteAddr(), x.c.max)
			_ = conn.Close()
			continue
		}
		return &countedConn{Conn: conn, c: x.c}, nil
	}
}

// countedConn gives its place back when it is closed, once.
type countedConn struct {
	net.Conn
	c    *connCap
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.c.open.Add(-1) })
	return c.Conn.Close()
}
