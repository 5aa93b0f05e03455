package attach

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xfertop/xfertop/probes/ncclprof/fold"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

func TestParseAddr(t *testing.T) {
	for _, c := range []struct {
		in, network, addr string
		bad               bool
	}{
		{"", "unix", DefaultSocket(), false},
		{"/run/x.sock", "unix", "/run/x.sock", false},
		{"unix:/run/y.sock", "unix", "/run/y.sock", false},
		{"tcp::7777", "tcp", "127.0.0.1:7777", false}, // loopback unless a host is given
		{"tcp:10.0.0.2:7777", "tcp", "10.0.0.2:7777", false},
		{"tcp:nohostport", "", "", true},
		{"unix:", "", "", true},
	} {
		a, err := ParseAddr(c.in)
		if (err != nil) != c.bad || (!c.bad && (a.Network != c.network || a.Address != c.addr)) {
			t.Errorf("ParseAddr(%q) = %+v, %v", c.in, a, err)
		}
	}
}

func TestListenPrivateAndStale(t *testing.T) {
	dir, err := os.MkdirTemp("", "xa")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	a := Addr{"unix", filepath.Join(dir, "sub", "s")}
	l, err := Listen(a)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(a.Address)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v (%v), want 0600", st.Mode().Perm(), err)
	}
	if d, _ := os.Stat(filepath.Dir(a.Address)); d.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v, want 0700", d.Mode().Perm())
	}
	if _, err := Listen(a); err == nil || !strings.Contains(err.Error(), "another xfertop attach") {
		t.Errorf("second listener: %v", err)
	}
	l.(interface{ SetUnlinkOnClose(bool) }).SetUnlinkOnClose(false)
	l.Close() // leaves a stale socket file, as a killed console does
	l2, err := Listen(a)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	l2.Close()
}

func posted(comm uint32, op uint64, rank int32, n uint16, seq uint32) *timeline.Event {
	return &timeline.Event{Kind: timeline.KindMark, Op: op, Comm: comm, Peer: rank, Ranks: n, Aux: seq, Sub: uint8(timeline.CollAllReduce)}
}

func TestHangs(t *testing.T) {
	t0 := int64(100e9)
	h := newHangs(time.Second)
	for r := range int32(3) {
		h.posted(posted(1, 10, r, 3, 0), t0) // complete
	}
	h.posted(posted(1, 11, 0, 3, 1), t0) // rank 1 and 2 missing
	h.posted(posted(1, 12, 0, 3, 2), t0) // queued behind the same hang
	h.posted(posted(2, 20, 1, 2, 5), t0) // another communicator, rank 0 missing
	if due := h.due(t0 + int64(500*time.Millisecond)); len(due) != 0 {
		t.Fatalf("due before the timeout: %+v", due)
	}
	due := h.due(t0 + int64(2*time.Second))
	if len(due) != 2 {
		t.Fatalf("due %+v, want one per communicator", due)
	}
	if d := due[0]; d.seq != 1 || len(d.posted) != 1 || len(d.missing) != 2 || d.missing[0] != 1 || d.missing[1] != 2 {
		t.Errorf("first hang %+v", d)
	}
	if d := due[1]; d.comm != 2 || d.seq != 5 || len(d.missing) != 1 || d.missing[0] != 0 {
		t.Errorf("second hang %+v", d)
	}
	if again := h.due(t0 + int64(3*time.Second)); len(again) != 0 {
		t.Errorf("alerted twice: %+v", again)
	}
	// The missing ranks arrive: the communicator moves again and may hang anew.
	h.posted(posted(1, 11, 1, 3, 1), t0)
	h.posted(posted(1, 11, 2, 3, 1), t0)
	if h.stuck[1] {
		t.Error("communicator 1 still marked stuck")
	}
	off := newHangs(-1)
	off.posted(posted(1, 1, 0, 2, 0), t0)
	if d := off.due(t0 + int64(time.Hour)); len(d) != 0 {
		t.Errorf("hang detection off, yet %+v", d)
	}
}

type sink struct {
	mu  sync.Mutex
	evs []timeline.Event
}

func (s *sink) Emit(e *timeline.Event) { s.mu.Lock(); s.evs = append(s.evs, *e); s.mu.Unlock() }

// A rank stream sent by hand: the server aligns its clock, renumbers its streams and labels,
// translates peers, hides posted marks, counts drops, and survives a connection cut mid-chunk.
func TestServerMerges(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir, err := os.MkdirTemp("", "xa")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	epoch := time.Now().UnixNano()
	k := &sink{}
	srv, err := Start(context.Background(), Config{Addr: Addr{"unix", filepath.Join(dir, "s")}, Epoch: epoch}, k)
	if err != nil {
		t.Fatal(err)
	}
	send := func(rank int, commRank uint32, cut bool) {
		c, err := Dial(srv.Addr(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		w, _ := recordings.NewStreamWriter("test", c)
		_ = w.WriteMeta(recordings.Meta{EpochUnixNs: epoch + 1000, Extra: map[string]string{"nccl.host": "h", "nccl.pid": "7", "nccl.rank": "5"}})
		strs := timeline.NewStrings()
		lbl, posted := strs.ID("comm world"), strs.ID(fold.PostedLabel)
		_ = w.WriteStrings(1, strs.All()[1:])
		_ = w.WriteDropped(3)
		_ = w.WriteEvents([]timeline.Event{
			{Kind: timeline.KindCommInit, Device: int32(rank), Comm: 9, Aux: commRank, Label: lbl, Peer: -1},
			{Kind: timeline.KindMark, Label: posted, Op: 1, Peer: int32(commRank), Ranks: 2, Comm: 9},
			{Kind: timeline.KindSend, Start: 5, End: 10, Device: int32(rank), Peer: int32(1 - commRank), Comm: 9, Stream: 1, Bytes: 64},
		})
		if cut {
			_ = w.Flush()
			c.Write([]byte{byte(recordings.ChunkEvents), 50, 1, 2}) // a chunk cut short
			return
		}
		_ = w.Close()
	}
	send(5, 0, false)
	deadline := time.Now().Add(10 * time.Second)
	for srv.Events() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	send(8, 1, true)
	for !srv.Quiet(50*time.Millisecond) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	srv.Close()
	var sends []timeline.Event
	for _, e := range k.evs {
		if e.Kind == timeline.KindMark {
			t.Errorf("a posted mark reached the sinks: %+v", e)
		}
		if e.Kind == timeline.KindSend {
			sends = append(sends, e)
		}
	}
	if len(sends) != 2 || sends[0].Device != 5 || sends[0].Start != 1005 || sends[0].Peer != 1 || sends[1].Peer != 5 || sends[0].Stream == sends[1].Stream {
		t.Errorf("sends %+v: want times shifted by 1000 ns, peers as job ranks (5 ↔ 8 once both are known), streams apart", sends)
	}
	if srv.Dropped() != 6 {
		t.Errorf("dropped %d, want 3 from each rank", srv.Dropped())
	}
	ranks := srv.Ranks()
	if len(ranks) != 2 || ranks[1].Torn == 0 || ranks[0].Host != "h" || ranks[0].Rank != 5 {
		t.Errorf("ranks %+v", ranks)
	}
}

// TestListenKeepsWhatIsNotASocket: a path that holds anything but a stale socket is refused with an
// error naming it, and left exactly as it was (an empty directory or a file is not the console's).
func TestListenKeepsWhatIsNotASocket(t *testing.T) {
	cases := []struct {
		name string
		make func(path string) error
		kind string
	}{
		{"regular file", func(p string) error { return os.WriteFile(p, []byte("keep me"), 0o600) }, "regular file"},
		{"empty directory", func(p string) error { return os.Mkdir(p, 0o700) }, "directory"},
		{"symbolic link", func(p string) error {
			target := p + ".target"
			if err := os.WriteFile(target, []byte("keep me"), 0o600); err != nil {
				return err
			}
			return os.Symlink(target, p)
		}, "symbolic link"},
		{"named pipe", func(p string) error { return mkfifo(p) }, "named pipe"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "xa")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(dir)
			p := filepath.Join(dir, "s")
			if err := c.make(p); err != nil {
				t.Skipf("cannot make a %s here: %v", c.name, err)
			}
			before, err := os.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			l, err := Listen(Addr{"unix", p})
			if err == nil {
				l.Close()
				t.Fatalf("Listen(%s holding a %s) = nil error; want a refusal", p, c.name)
			}
			if !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), c.kind) {
				t.Errorf("Listen error %q; want it to name %s and say it is a %s", err, p, c.kind)
			}
			after, err := os.Lstat(p)
			if err != nil {
				t.Fatalf("%s was removed: %v", c.name, err)
			}
			if after.Mode() != before.Mode() || !os.SameFile(before, after) {
				t.Errorf("%s changed: mode %v -> %v", c.name, before.Mode(), after.Mode())
			}
		})
	}
}
