// Package rastest is a job's NCCL RAS port for tests: it answers NCCL's RAS client protocol as
// NCCL's src/ras/client_support.cc does (the handshake, the format, a status document after which
// the connection is closed, the monitor mode's events), and records the commands it was sent.
package rastest

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
)

// Server is a fake RAS port on loopback. Set its fields before the first connection.
type Server struct {
	l         net.Listener
	Doc       []byte // the status answer
	Events    string // written after MONITOR's OK
	NoJSON    bool   // answer SET FORMAT json with an error, as NCCL before 2.28.7
	NoMonitor bool   // answer MONITOR with an error, as NCCL before 2.29
	mu        sync.Mutex
	cmds      [][]string
	wg        sync.WaitGroup
	done      chan struct{}
}

// New starts a fake RAS port answering doc; it stops when the test ends.
func New(t testing.TB, doc []byte) *Server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{l: l, Doc: doc, done: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.serve(c)
			}()
		}
	}()
	t.Cleanup(func() {
		close(s.done)
		l.Close()
		s.wg.Wait()
	})
	return s
}

// Addr is the port's HOST:PORT.
func (s *Server) Addr() string { return s.l.Addr().String() }

// Commands returns each connection's commands, in the order the connections came.
func (s *Server) Commands() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][]string, len(s.cmds))
	for i, c := range s.cmds {
		out[i] = append([]string(nil), c...)
	}
	return out
}

func (s *Server) serve(c net.Conn) {
	defer c.Close()
	s.mu.Lock()
	s.cmds = append(s.cmds, nil)
	idx := len(s.cmds) - 1
	s.mu.Unlock()
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.TrimRight(line, "\r\n")
		s.mu.Lock()
		s.cmds[idx] = append(s.cmds[idx], cmd)
		s.mu.Unlock()
		up := strings.ToUpper(cmd)
		switch {
		case strings.HasPrefix(up, "CLIENT PROTOCOL "):
			fmt.Fprint(c, "SERVER PROTOCOL 2\n")
		case strings.HasPrefix(up, "TIMEOUT "):
			fmt.Fprint(c, "OK\n")
		case up == "SET FORMAT JSON" && s.NoJSON:
			fmt.Fprint(c, "ERROR: Invalid format json\n")
		case strings.HasPrefix(up, "SET FORMAT "):
			fmt.Fprint(c, "OK\n")
		case up == "STATUS" || up == "VERBOSE STATUS":
			c.Write(s.Doc)
			return // the job closes the connection after the status
		case strings.HasPrefix(up, "MONITOR") && !s.NoMonitor:
			fmt.Fprint(c, "OK\n"+s.Events)
			<-s.done
			return
		default:
			fmt.Fprintf(c, "ERROR: Unknown command %s\n", cmd)
		}
	}
}
