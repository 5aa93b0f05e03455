package attach

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// namingSink records the host names it is given and, for each, how many events carrying that
// host it had been handed before.
type namingSink struct {
	mu     sync.Mutex
	named  map[int32]string
	before map[int32]int // events of the host emitted before its name
	seen   map[uint16]int
}

func (s *namingSink) Emit(e *timeline.Event) { s.mu.Lock(); s.seen[e.Host]++; s.mu.Unlock() }
func (s *namingSink) NameHost(h int32, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.named[h], s.before[h] = name, s.seen[uint16(h)]
}

// As ranks join a live job, the hosts they name reach the sinks that take names (the analysis,
// the exporter) before the first event of the host, the server's description and HostNames
// carry them, and the analysis's host map shows them: rank 3 on node-b is on host 1, named so.
func TestServerNamesHosts(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir, err := os.MkdirTemp("", "xa")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	epoch := time.Now().UnixNano()
	k := &namingSink{named: map[int32]string{}, before: map[int32]int{}, seen: map[uint16]int{}}
	an := analysis.New(timeline.Meta{Topology: "unknown", Extra: map[string]string{timeline.HostsInEventsKey: "1"}})
	srv, err := Start(context.Background(), Config{Addr: Addr{"unix", filepath.Join(dir, "s")}, Epoch: epoch}, k, an)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range []struct {
		rank int
		host string
	}{{0, "node-a"}, {3, "node-b"}, {1, "node-a"}} {
		c, err := Dial(srv.Addr(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		w, _ := recordings.NewStreamWriter("test", c)
		_ = w.WriteMeta(recordings.Meta{EpochUnixNs: epoch, Extra: map[string]string{"nccl.host": r.host, "nccl.pid": fmt.Sprint(10 + i), "nccl.rank": fmt.Sprint(r.rank)}})
		_ = w.WriteEvents([]timeline.Event{{Kind: timeline.KindKernel, Start: 5, End: 10, Device: int32(r.rank), Peer: -1, Stream: 1}})
		_ = w.Close()
		c.Close()
		deadline := time.Now().Add(10 * time.Second)
		for srv.Events() < int64(i+1) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	srv.Close()
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.named) != 2 || k.named[0] != "node-a" || k.named[1] != "node-b" || k.before[0] != 0 || k.before[1] != 0 {
		t.Errorf("sink named %v (events before each %v); want host 0 node-a, host 1 node-b, each before its events", k.named, k.before)
	}
	if got := srv.HostNames(); !slices.Equal(got, []string{"node-a", "node-b"}) {
		t.Errorf("HostNames = %q; want node-a, node-b", got)
	}
	if m := srv.Meta(); m.Extra[timeline.HostNameKey(1)] != "node-b" {
		t.Errorf("Meta's Extra %v; want host 1 named node-b", m.Extra)
	}
	hosts := an.Result(srv.Strings()).Hosts
	if h, ok := hosts.Host(3); !ok || h != 1 || hosts.Label(h) != "node-b" {
		t.Errorf("the analysis places rank 3 on host %d (%v), %q; want host 1, node-b", h, ok, hosts.Label(h))
	}
}
