package ras

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/xfertop/xfertop/analysis/diagnosis"
	"github.com/xfertop/xfertop/importers/ras/rastest"
	"github.com/xfertop/xfertop/timeline"
)

func hangDoc(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "hang.json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStatusProtocol: a status query speaks NCCL's RAS client protocol as ncclras does
// (-v -f json, and -t when a collective timeout is given) and reads the document.
func TestStatusProtocol(t *testing.T) {
	s := rastest.New(t, hangDoc(t))
	doc, err := Status(context.Background(), s.Addr(), ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Comms) != 2 || doc.NCCLVersion != "2.28.7" {
		t.Errorf("status: %d communicators, NCCL %q; want hang.json's 2, 2.28.7", len(doc.Comms), doc.NCCLVersion)
	}
	if _, err := Status(context.Background(), s.Addr(), ClientOptions{CollTimeout: 3 * time.Second}); err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"CLIENT PROTOCOL 2", "SET FORMAT json", "VERBOSE STATUS"}, {"CLIENT PROTOCOL 2", "TIMEOUT 3", "SET FORMAT json", "VERBOSE STATUS"}}
	if got := s.Commands(); !reflect.DeepEqual(got, want) {
		t.Errorf("commands %q; want %q", got, want)
	}
}

// TestStatusErrors: an NCCL without JSON, an answer that is not the protocol's, a document that
// is not ncclras's, and no job at all are errors saying so.
func TestStatusErrors(t *testing.T) {
	old := rastest.New(t, hangDoc(t))
	old.NoJSON = true
	bad := rastest.New(t, []byte(`{"nccl_version": "2.29.1", "communicators": [{"hash": "0x1", "size": 0}]}`))
	cut := rastest.New(t, []byte(`{"nccl_version": "2.29.1", "communicators": [`))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := l.Addr().String()
	l.Close()
	for _, c := range []struct {
		addr, want string
	}{
		{old.Addr(), `sent "SET FORMAT json", got "ERROR: Invalid format json": the job's NCCL writes no JSON`},
		{bad.Addr(), "size 0 out of range"},
		{cut.Addr(), "(byte 45): not ncclras JSON: unexpected EOF"},
		{gone, "is the job running with RAS enabled"},
	} {
		_, err := Status(context.Background(), c.addr, ClientOptions{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Status(%s) = %v; want an error containing %q", c.addr, err, c.want)
		}
	}
}

// polled is one event a Poller emitted, its label read on the poller's goroutine.
type polled struct {
	e   timeline.Event
	msg string
}

// runPoller runs a Poller against addr until stop says it has seen enough, and returns what it
// emitted. The test's deadline is a guard against a poller that never gets there.
func runPoller(t *testing.T, addr string, stop func([]polled) bool) []polled {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch := make(chan []polled, 16)
	p := &Poller{Addr: addr, Interval: time.Millisecond, Epoch: 1, CommBase: 1000}
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(ctx, func(b []timeline.Event) {
			out := make([]polled, len(b))
			for i := range b {
				out[i] = polled{b[i], p.Strings.Lookup(b[i].Label)}
			}
			select {
			case ch <- out:
			case <-ctx.Done():
			}
		})
	}()
	var all []polled
	for !stop(all) {
		select {
		case b := <-ch:
			all = append(all, b...)
		case <-ctx.Done():
			t.Fatalf("the poller emitted %d events, and not yet what the test waits for: %v", len(all), all)
		}
	}
	cancel()
	<-done
	return all
}

// fold feeds what the poller emitted into a diagnosis, as attach's sinks get it.
func fold(evs []polled) []string {
	strs := timeline.NewStrings()
	d := diagnosis.New(nil)
	for _, p := range evs {
		e := p.e
		e.Label = strs.ID(p.msg)
		d.Add(&e)
	}
	var got []string
	for _, f := range d.Result(strs) {
		got = append(got, fmt.Sprintf("%s rank %d comm %d", f.Kind, f.Rank, f.Comm))
	}
	sort.Strings(got)
	return got
}

// TestPollerFeedsFindings: a Poller on a hung job's RAS port (a fake one answering hang.json,
// whose monitor tells a peer dead) feeds the diagnosis its findings: the dead rank at once, the
// failing rank, and the count mismatch once a second status finds the counts unmoved; each told
// once however many polls see it.
func TestPollerFeedsFindings(t *testing.T) {
	s := rastest.New(t, hangDoc(t))
	s.Events = "{\n  \"timestamp\": \"2026-11-27 08:30:05\",\n  \"group\": \"LIFECYCLE\",\n  \"event\": \"PEER_DEAD\",\n" +
		"  \"peer\": {\n    \"host\": \"node1\",\n    \"pid\": 201,\n    \"cuda_devs\": [1],\n    \"nvml_devs\": [1]\n  },\n  \"details\": \"\"\n}\n"
	want := []string{"dead rank rank 3 comm 1001", "hang rank 1 comm 1001", "rank error rank 2 comm 1001"}
	monitor := func(evs []polled) bool {
		for _, p := range evs {
			if strings.Contains(p.msg, "RAS monitor at ") && strings.Contains(p.msg, "PEER_DEAD: rank 3, process 201 on node1") {
				return true
			}
		}
		return false
	}
	evs := runPoller(t, s.Addr(), func(evs []polled) bool { return monitor(evs) && reflect.DeepEqual(fold(evs), want) })
	seen := map[string]int{}
	for _, p := range evs {
		seen[p.msg]++
	}
	for msg, n := range seen {
		if n > 1 {
			t.Errorf("%q told %d times; want once", msg, n)
		}
	}
	var monitors int
	for _, cmds := range s.Commands() {
		if len(cmds) > 0 && cmds[len(cmds)-1] == "MONITOR lifecycle" {
			monitors++
		}
	}
	if monitors != 1 {
		t.Errorf("%d monitor connections; want 1 (it lasts)", monitors)
	}
}

// TestPollerWithoutMonitor: a job whose NCCL has no monitor mode is polled all the same, and the
// poller says so once.
func TestPollerWithoutMonitor(t *testing.T) {
	s := rastest.New(t, hangDoc(t))
	s.NoMonitor = true
	want := []string{"dead rank rank 3 comm 1001", "hang rank 1 comm 1001", "rank error rank 2 comm 1001"}
	runPoller(t, s.Addr(), func(evs []polled) bool {
		for _, p := range evs {
			if strings.Contains(p.msg, "has no RAS monitor mode") {
				return reflect.DeepEqual(fold(evs), want)
			}
		}
		return false
	})
}

// FuzzStatus: any answer to a status query is a document or an error, never a panic.
func FuzzStatus(f *testing.F) {
	f.Add([]byte("SERVER PROTOCOL 2\nOK\n"), []byte(`{"nccl_version":"2.29.1","communicators":[]}`))
	f.Add([]byte("SERVER PROTOCOL 2\nERROR: Invalid format json\n"), []byte{})
	f.Add([]byte("garbage"), []byte(`{`))
	// A real job's answer (NCCL 2.28.9), to SET FORMAT json and VERBOSE STATUS.
	if b, err := os.ReadFile(realStatus); err == nil {
		f.Add([]byte("SERVER PROTOCOL 2\nOK\n"), b)
	} else {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, handshake, body []byte) {
		opts := ClientOptions{DialTimeout: time.Second, Dial: func(ctx context.Context, addr string) (net.Conn, error) {
			a, b := net.Pipe()
			go func() {
				defer b.Close()
				go func() {
					buf := make([]byte, 256)
					for {
						if _, err := b.Read(buf); err != nil {
							return
						}
					}
				}()
				b.Write(handshake)
				b.Write(body)
			}()
			return a, nil
		}}
		_, _ = Status(context.Background(), "fuzz", opts)
	})
}

// TestPollerQuotesGarbagePeer: a peer that answers the greeting with kilobytes that are not NCCL
// RAS is named in the poller's event by its first QuoteMax bytes and its length, as the attach
// warning names it, not with the whole answer in the label.
func TestPollerQuotesGarbagePeer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	junk := strings.Repeat("<html>junk ", 200) // 2,200 bytes on one line
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 256)
				c.Read(buf) // the greeting
				c.Write([]byte(junk + "\n"))
			}()
		}
	}()
	got := runPoller(t, l.Addr().String(), func(evs []polled) bool { return len(evs) > 0 })
	msg := got[0].msg
	want := fmt.Sprintf("got %q… (%d bytes: not NCCL RAS)", junk[:QuoteMax], len(junk))
	if got[0].e.Kind != timeline.KindMark || !strings.Contains(msg, want) || len(msg) > 200 {
		t.Fatalf("event %v %q (%d bytes); want a mark containing %q", got[0].e.Kind, msg, len(msg), want)
	}
}
