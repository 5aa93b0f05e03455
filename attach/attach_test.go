package attach

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xfertop/xfertop/join"
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
	t.Setenv("XDG_RUNTIME_DIR", dir) // the default socket, whose directory Listen makes
	a := Addr{"unix", DefaultSocket()}
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
		lbl, posted := strs.ID("comm world"), strs.ID(join.PostedLabel)
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

// An address is loopback when only this machine can reach it; one on every interface is given
// to ranks as this machine's name, never as 0.0.0.0 (no address to connect to).
func TestAddrLoopbackAndForRanks(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip(err)
	}
	tests := []struct {
		in       string
		loopback bool
		forRanks string
	}{
		{"/tmp/x.sock", true, "/tmp/x.sock"},
		{"tcp::7777", true, "tcp:127.0.0.1:7777"},
		{"tcp:localhost:7777", true, "tcp:localhost:7777"},
		{"tcp:[::1]:7777", true, "tcp:[::1]:7777"},
		{"tcp:0.0.0.0:7777", false, "tcp:" + net.JoinHostPort(host, "7777")},
		{"tcp:[::]:7777", false, "tcp:" + net.JoinHostPort(host, "7777")},
		{"tcp:10.0.0.2:7777", false, "tcp:10.0.0.2:7777"},
	}
	for _, tc := range tests {
		a, err := ParseAddr(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if a.Loopback() != tc.loopback || a.ForRanks().String() != tc.forRanks {
			t.Errorf("%s: Loopback %v, ForRanks %s; want %v, %s", tc.in, a.Loopback(), a.ForRanks(), tc.loopback, tc.forRanks)
		}
	}
}

// Only the default socket's directory is made: a --socket path in a directory that does not exist
// is refused naming it, and nothing is created.
func TestListenMakesOnlyTheDefaultDirectory(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", filepath.Join(dir, "run"))
	typo := filepath.Join(dir, "nonexistent", "dir")
	_, err := Listen(Addr{"unix", filepath.Join(typo, "sock")})
	if err == nil || !strings.Contains(err.Error(), "directory "+typo+" does not exist") {
		t.Errorf("Listen in a missing directory: %v; want refused naming %s", err, typo)
	}
	if _, err := os.Stat(filepath.Join(dir, "nonexistent")); !os.IsNotExist(err) {
		t.Errorf("Listen created %s (%v)", filepath.Join(dir, "nonexistent"), err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(Addr{"unix", filepath.Join(file, "sock")}); err == nil || !strings.Contains(err.Error(), file+" is not a directory") {
		t.Errorf("Listen under a file: %v; want refused as not a directory", err)
	}
	l, err := Listen(Addr{"unix", DefaultSocket()})
	if err != nil {
		t.Fatalf("the default socket: %v", err)
	}
	l.Close()
}
