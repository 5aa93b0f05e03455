//go:build cgo

package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/analysis/diagnosis"
	"github.com/xfertop/xfertop/attach"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// The plugin is built as NCCL loads it (a c-shared library) and driven by testdata/harness, a C
// program that calls it exactly as NCCL 2.28's core does; the console's side is an attach.Server.

var build struct {
	once    sync.Once
	dir     string
	lib     string
	harness string
	err     error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	os.Exit(code)
}

// tools builds the plugin and the harness once per test binary.
func tools(t testing.TB) (lib, harness string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the NCCL profiler plugin is built for Linux, as NCCL is")
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler (%s) to build the harness: %v", cc, err)
	}
	build.once.Do(func() {
		build.dir, build.err = os.MkdirTemp("", "ncclprof-test")
		if build.err != nil {
			return
		}
		build.lib = filepath.Join(build.dir, "libnccl-profiler-xfertop.so")
		build.harness = filepath.Join(build.dir, "harness")
		out, err := exec.Command("go", "build", "-buildmode=c-shared", "-o", build.lib, ".").CombinedOutput()
		if err != nil {
			build.err = fmt.Errorf("go build -buildmode=c-shared: %v\n%s", err, out)
			return
		}
		out, err = exec.Command(cc, "-O2", "-Wall", "-Werror", "-o", build.harness, "testdata/harness/harness.c", "-ldl", "-lpthread").CombinedOutput()
		if err != nil {
			build.err = fmt.Errorf("build the harness: %v\n%s", err, out)
		}
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.lib, build.harness
}

// collect is a sink keeping every event the console merged.
type collect struct {
	mu  sync.Mutex
	evs []timeline.Event
}

func (c *collect) Emit(e *timeline.Event) {
	c.mu.Lock()
	c.evs = append(c.evs, *e)
	c.mu.Unlock()
}

func (c *collect) events() []timeline.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.evs)
}

func socketPath(t testing.TB) string {
	// Unix socket paths are short (108 bytes): a temporary directory of its own.
	d, err := os.MkdirTemp("", "xa")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return filepath.Join(d, "s")
}

func startServer(t testing.TB, sock string, sinks ...timeline.Sink) *attach.Server {
	t.Helper()
	srv, err := attach.Start(context.Background(), attach.Config{Addr: attach.Addr{Network: "unix", Address: sock}}, sinks...)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// rankRun is one harness process's result.
type rankRun struct {
	rank  int
	lines []string
	err   error
	out   string
}

// runRanks runs n harness processes at once, one per rank.
func runRanks(t *testing.T, n int, env []string, args ...string) []rankRun {
	t.Helper()
	lib, harness := tools(t)
	runs := make([]rankRun, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			rargs := make([]string, len(args))
			for i, a := range args { // {rank} in an argument is the rank's number
				rargs[i] = strings.ReplaceAll(a, "{rank}", fmt.Sprint(r))
			}
			cmd := exec.CommandContext(ctx, harness, append([]string{"-lib", lib, "-rank", fmt.Sprint(r), "-nranks", fmt.Sprint(n)}, rargs...)...)
			cmd.Env = append(os.Environ(), env...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			runs[r] = rankRun{rank: r, err: err, out: string(out) + stderr.String()}
			sc := bufio.NewScanner(bytes.NewReader(out))
			for sc.Scan() {
				runs[r].lines = append(runs[r].lines, sc.Text())
			}
		}()
	}
	wg.Wait()
	for _, r := range runs {
		if r.err != nil {
			t.Fatalf("rank %d: %v\n%s", r.rank, r.err, r.out)
		}
	}
	return runs
}

// waitFor polls cond until it holds (or fails the test after a generous deadline).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// issued is what a harness rank says it issued, in order.
type issued struct {
	kind  string // coll, send, recv; local: a collective NCCL ran as a local copy, unseen by the plugin
	op    string // a collective's: all_reduce, all_gather
	seq   int
	peer  int
	bytes int64
	api   string
}

func parseIssued(t *testing.T, lines []string) []issued {
	var out []issued
	for _, l := range lines {
		var x issued
		switch {
		case strings.HasPrefix(l, "coll "):
			if _, err := fmt.Sscanf(l, "coll %s seq %d bytes %d", &x.op, &x.seq, &x.bytes); err != nil {
				t.Fatalf("harness line %q: %v", l, err)
			}
			x.kind = "coll"
		case strings.HasPrefix(l, "send "), strings.HasPrefix(l, "recv "):
			if _, err := fmt.Sscanf(l[5:], "peer %d bytes %d api %s", &x.peer, &x.bytes, &x.api); err != nil {
				t.Fatalf("harness line %q: %v", l, err)
			}
			_, x.api, _ = strings.Cut(l, " api ") // with its tag (v7), as the label shows it
			x.kind = l[:4]
		case strings.HasPrefix(l, "local "):
			if _, err := fmt.Sscanf(l, "local %s bytes %d", &x.op, &x.bytes); err != nil {
				t.Fatalf("harness line %q: %v", l, err)
			}
			x.kind = "local"
		default:
			continue
		}
		out = append(out, x)
	}
	return out
}

// received is what the console got for one rank, in the same terms. Collectives are put in the
// order they ran (one stream: by start) and numbered in it, as the harness numbers them: the
// console may receive them in another order, and a collective event's Aux is its NCCL choice, not
// its sequence number.
func received(evs []timeline.Event, labels *timeline.Strings, device int32) []issued {
	var out []issued
	var colls []timeline.Event
	for _, e := range evs {
		if e.Device != device {
			continue
		}
		switch e.Kind {
		case timeline.KindCollective:
			colls = append(colls, e)
		case timeline.KindSend, timeline.KindRecv:
			out = append(out, issued{kind: e.Kind.String(), peer: int(e.Peer), bytes: e.Bytes, api: labels.Lookup(e.Label)})
		}
	}
	slices.SortStableFunc(colls, func(a, b timeline.Event) int { return cmp.Compare(a.Start, b.Start) })
	for i, e := range colls {
		out = append(out, issued{kind: "coll", op: e.OpName(), seq: i, bytes: e.Bytes})
	}
	return out
}

func TestHarnessScenarios(t *testing.T) {
	defer goleak.VerifyNone(t)
	cases := []struct {
		scenario string
		ranks    int
		lookup   string
		level    string
	}{
		{"allreduce", 2, "6,5,4", "kernel"},
		{"allreduce", 4, "5,4", "kernel"}, // NCCL 2.28's loader: v5 first
		{"allreduce", 2, "4", "all"},      // NCCL 2.27: v4, no API events
		{"allreduce", 2, "6,5,4", "api"},
		{"allreduce", 2, "6,5,4", "proxy"},
		{"sendrecv", 2, "6,5,4", "kernel"},
		{"sendrecv", 2, "4", "kernel"},
		{"alltoall", 4, "6,5,4", "kernel"},
		{"alltoall", 3, "6,5,4", "all"},
		{"alltoall", 1, "6,5,4", "all"},       // a local copy: nothing reaches the plugin
		{"ring", 2, "6,5,4", "all"},           // torch's batch_isend_irecv
		{"ring", 1, "6,5,4", "all"},           // to and from itself: tasks, seen
		{"allreduce", 2, "7,6,5,4", "kernel"}, // NCCL 2.31, 2.32: v7, with kernel phases
		{"allreduce", 2, "7,6,5,4", "all"},
		{"sendrecv", 2, "7,6,5,4", "kernel"},
		{"ce", 2, "6,5,4", "kernel"}, // NCCL 2.29, 2.30: copy-engine collectives
		{"ce", 3, "7,6,5,4", "api"},
		{"allreduce", 2, "7,6,5,4", "coll"}, // the default: collectives and their kernel channels
		{"alltoall", 4, "7,6,5,4", "coll"},
		{"ce", 2, "6,5,4", "coll"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s-%dranks-v%s-%s", c.scenario, c.ranks, c.lookup, c.level), func(t *testing.T) {
			sock := socketPath(t)
			sink := &collect{}
			srv := startServer(t, sock, sink)
			runs := runRanks(t, c.ranks, []string{"XFERTOP_ATTACH=" + sock, "XFERTOP_NCCL_EVENTS=" + c.level},
				"-scenario", c.scenario, "-iters", "3", "-lookup", c.lookup)
			waitFor(t, "every rank to end", func() bool { return srv.Quiet(100 * time.Millisecond) })
			srv.Close()
			evs, labels := sink.events(), srv.Strings()
			if d := srv.Dropped(); d != 0 {
				t.Errorf("%d events dropped", d)
			}
			ranks := srv.Ranks()
			if len(ranks) != c.ranks {
				t.Fatalf("%d ranks connected, want %d: %+v", len(ranks), c.ranks, ranks)
			}
			for _, run := range runs {
				// What NCCL ran as a local copy never reaches the plugin.
				want := slices.DeleteFunc(parseIssued(t, run.lines), func(x issued) bool { return x.kind == "local" })
				if c.level == "coll" {
					// No API events: a send or receive is labelled with its task's function,
					// not the call that made it (AlltoAll).
					for i := range want {
						if want[i].kind == "send" || want[i].kind == "recv" {
							want[i].api = strings.ToUpper(want[i].kind[:1]) + want[i].kind[1:]
						}
					}
				}
				got := received(evs, labels, int32(run.rank))
				if !slices.Equal(got, want) {
					t.Errorf("rank %d: the console received\n%v\nthe harness issued\n%v", run.rank, got, want)
				}
			}
			checkOps(t, evs, c.ranks)
			checkTimes(t, evs, labels, c.level, c.lookup)
		})
	}
}

// checkOps: every collective's op id is shared by all its ranks, and every send has its receive.
func checkOps(t *testing.T, evs []timeline.Event, n int) {
	t.Helper()
	colls := map[uint64][]int32{}
	sends, recvs := map[uint64]timeline.Event{}, map[uint64]timeline.Event{}
	for _, e := range evs {
		switch e.Kind {
		case timeline.KindCollective:
			if op := timeline.CollOp(e.Sub); int(e.Ranks) != n || (op != timeline.CollAllReduce && op != timeline.CollAllGather) {
				t.Errorf("collective %+v: want all_reduce or all_gather over %d ranks", e, n)
			}
			colls[e.Op] = append(colls[e.Op], e.Device)
		case timeline.KindSend:
			sends[e.Op] = e
		case timeline.KindRecv:
			recvs[e.Op] = e
		}
	}
	for op, devs := range colls {
		slices.Sort(devs)
		if len(devs) != n || devs[0] != 0 || devs[n-1] != int32(n-1) {
			t.Errorf("collective op %x reported by devices %v, want each of %d ranks once", op, devs, n)
		}
	}
	if len(sends) != len(recvs) {
		t.Errorf("%d sends, %d receives", len(sends), len(recvs))
	}
	for op, s := range sends {
		r, ok := recvs[op]
		if !ok || r.Device != s.Peer || r.Peer != s.Device || r.Bytes != s.Bytes {
			t.Errorf("send %+v: its receive is %+v (%v)", s, r, ok)
		}
	}
}

// checkTimes: with kernel channels, a task lasts exactly what the GPU timers say (100 µs + 10 µs
// for the second channel); without, it ends no earlier than it starts. The exact duration holds
// however late the harness's proxy thread starts the channels (a loaded machine): the plugin waits
// for a task's channels by events, not for a time (fold's awaitsChannels).
func checkTimes(t *testing.T, evs []timeline.Event, labels *timeline.Strings, level, lookup string) {
	t.Helper()
	runtimes, tasks := 0, 0
	for _, e := range evs {
		switch e.Kind {
		case timeline.KindCollective, timeline.KindSend, timeline.KindRecv:
			tasks++
			// A copy-engine collective has no kernel: its time is the host's, from start to stop.
			ce := strings.HasPrefix(labels.Lookup(e.Label), "copy engine")
			if (level == "kernel" || level == "all" || level == "coll") && !ce && e.Dur() != 110_000 {
				t.Errorf("%s on device %d lasted %d ns; its kernel channels say 110000", e.OpName(), e.Device, e.Dur())
			}
			if e.End < e.Start {
				t.Errorf("%+v ends before it starts", e)
			}
		case timeline.KindRuntime:
			runtimes++
		}
	}
	if lookup == "4" && runtimes != 0 {
		t.Errorf("v4 has no API events, yet %d runtime events arrived", runtimes)
	}
	if tasks == 0 && runtimes != 0 {
		// A job whose every call NCCL ran as a local copy (one rank's ncclAlltoAll): NCCL returns
		// before its profiler calls, the API event's included.
		t.Errorf("%d API call (runtime) events, yet no task reached the plugin", runtimes)
	}
	if lookup != "4" && level != "coll" && tasks > 0 && runtimes == 0 {
		t.Error("no API call (runtime) events")
	}
	if level == "coll" && runtimes != 0 {
		t.Errorf("%d API call (runtime) events at the coll level, which does not ask for them", runtimes)
	}
}

func TestHarnessConsoleAbsent(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "nobody-listens")
	runs := runRanks(t, 2, []string{"XFERTOP_ATTACH=" + sock, "XFERTOP_FLUSH_TIMEOUT=300"}, "-iters", "5")
	for _, r := range runs {
		if !slices.Contains(r.lines, "done") {
			t.Errorf("rank %d did not finish: %s", r.rank, r.out)
		}
	}
}

func TestHarnessUnsupportedVersion(t *testing.T) {
	defer goleak.VerifyNone(t)
	sock := socketPath(t)
	srv := startServer(t, sock)
	defer srv.Close()
	// An NCCL whose interfaces are v8 and v1–v3 finds none in this plugin and runs without it.
	runs := runRanks(t, 1, []string{"XFERTOP_ATTACH=" + sock}, "-lookup", "8,3,2,1")
	if len(runs[0].lines) == 0 || !strings.HasPrefix(runs[0].lines[0], "unsupported") {
		t.Fatalf("harness: %s", runs[0].out)
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(srv.Ranks()); n != 0 {
		t.Fatalf("%d ranks connected through an interface NCCL does not have", n)
	}
}

func TestHarnessUnknownEventType(t *testing.T) {
	defer goleak.VerifyNone(t)
	sock := socketPath(t)
	sink := &collect{}
	srv := startServer(t, sock, sink)
	runs := runRanks(t, 1, []string{"XFERTOP_ATTACH=" + sock}, "-scenario", "unknown", "-iters", "1")
	waitFor(t, "the rank to end", func() bool { return srv.Quiet(100 * time.Millisecond) })
	srv.Close()
	if !slices.Contains(runs[0].lines, "unknown handle (nil)") {
		t.Errorf("the plugin returned a handle for an unknown event type: %s", runs[0].out)
	}
	var alert string
	colls := 0
	for _, e := range sink.events() {
		switch e.Kind {
		case timeline.KindAlert:
			alert = srv.Strings().Lookup(e.Label)
		case timeline.KindCollective:
			colls++
		}
	}
	if !strings.Contains(alert, "event type this plugin does not know") || colls != 1 {
		t.Fatalf("alert %q, %d collectives", alert, colls)
	}
}

// A rank that never posts a collective its peers posted: the peers wait for it (in flight while
// they run, and handed over as waits ended with the session), and the diagnosis names the hang
// from those waits, as it does the engine's: attach adds no alert of its own.
func TestHarnessHangFinding(t *testing.T) {
	defer goleak.VerifyNone(t)
	sock := socketPath(t)
	sink := &collect{}
	an := analysis.New(timeline.Meta{GPUsPerHost: 8})
	const floor = 300 * time.Millisecond
	an.SetHangFloor(int64(floor))
	srv := startServer(t, sock, sink, an)
	// Rank 2 of 3 never posts the second group's all-reduces (seq 2 and 3).
	runRanks(t, 3, []string{"XFERTOP_ATTACH=" + sock}, "-scenario", "hang", "-iters", "2")
	// The waits began before the ranks ended: past the floor from now, they are past it at the
	// close (a wait, not an assertion on time).
	time.Sleep(2 * floor)
	srv.Close()
	waits := 0
	for _, e := range sink.events() {
		if e.Kind == timeline.KindAlert && e.Status == timeline.StatusTimeout {
			t.Errorf("alert %q: attach makes no verdict of its own", srv.Strings().Lookup(e.Label))
		}
		if e.Kind == timeline.KindPeerWait && e.Status == timeline.StatusTimeout {
			waits++
		}
	}
	fs := an.Result(srv.Strings()).Findings
	// One finding for the communicator: the collective queued behind the first is the same hang.
	if len(fs) != 1 || fs[0].Kind != diagnosis.Hang || fs[0].Rank != 2 || !strings.Contains(fs[0].Evidence, "all_reduce #3 on communicator") ||
		!strings.Contains(fs[0].Evidence, "2 ranks waited") || !strings.HasSuffix(fs[0].Evidence, "rank 2 never entered it") || waits != 4 {
		for _, f := range fs {
			t.Logf("%s", f.String())
		}
		t.Fatalf("%d findings, %d waits ended with the session; want one hang naming rank 2 in all_reduce #3, from ranks 0 and 1's 4 waits", len(fs), waits)
	}
}

// slowSink holds the console up for a while, as a console too slow for the job would.
type slowSink struct {
	collect
	until time.Time
}

func (s *slowSink) Emit(e *timeline.Event) {
	if d := time.Until(s.until); d > 0 {
		time.Sleep(d)
	}
	s.collect.Emit(e)
}

func TestHarnessSlowConsole(t *testing.T) {
	defer goleak.VerifyNone(t)
	sock := socketPath(t)
	sink := &slowSink{until: time.Now().Add(1500 * time.Millisecond)}
	srv := startServer(t, sock, sink)
	// A small ring and a burst of all-to-alls: the sender waits on the full socket, the ring fills,
	// and the callbacks drop and count; the count reaches the console once it reads again.
	runs := runRanks(t, 4, []string{"XFERTOP_ATTACH=" + sock, "XFERTOP_RING_EVENTS=256", "XFERTOP_FLUSH_TIMEOUT=500"},
		"-scenario", "alltoall", "-iters", "3000", "-pace-us", "300")
	waitFor(t, "every rank to end", func() bool { return srv.Quiet(100 * time.Millisecond) })
	srv.Close()
	for _, r := range runs {
		if !slices.Contains(r.lines, "done") {
			t.Errorf("rank %d did not finish: %s", r.rank, r.out)
		}
	}
	if srv.Dropped() == 0 {
		t.Fatalf("no drops reported by a job whose console stalled (%d events received)", len(sink.events()))
	}
	t.Logf("received %d events, %d dropped", len(sink.events()), srv.Dropped())
}

func TestHarnessConsoleKilledMidRun(t *testing.T) {
	defer goleak.VerifyNone(t)
	sock := socketPath(t)
	first := &collect{}
	srv := startServer(t, sock, first)
	lib, harness := tools(t)
	cmd := exec.Command(harness, "-lib", lib, "-rank", "0", "-nranks", "1", "-iters", "600", "-pace-us", "5000")
	cmd.Env = append(os.Environ(), "XFERTOP_ATTACH="+sock)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "events from the job", func() bool { return len(first.events()) > 10 })
	srv.Close() // the console dies mid-run
	time.Sleep(300 * time.Millisecond)
	second := &collect{}
	srv2 := startServer(t, sock, second) // and comes back: the plugin reconnects
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the job failed after its console died: %v\n%s", err, out.String())
	}
	waitFor(t, "the rank to end", func() bool { return srv2.Quiet(100 * time.Millisecond) })
	srv2.Close()
	if !strings.Contains(out.String(), "done") {
		t.Fatalf("the job did not finish: %s", out.String())
	}
	n2 := 0
	for _, e := range second.events() {
		if e.Kind == timeline.KindCollective {
			n2++
		}
	}
	if n2 == 0 || srv2.Dropped() == 0 {
		t.Fatalf("after reconnecting: %d collectives, %d reported dropped while no console listened", n2, srv2.Dropped())
	}
}

func TestHarnessRecordDir(t *testing.T) {
	dir := t.TempDir()
	runRanks(t, 2, []string{"XFERTOP_RECORD_DIR=" + dir}, "-iters", "4")
	files, _ := filepath.Glob(filepath.Join(dir, "*.xfr"))
	if len(files) != 2 {
		t.Fatalf("recordings %v, want one per rank", files)
	}
	for _, f := range files {
		rec, err := recordings.ReadFile(f, recordings.Options{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range rec.Events {
			if e.Kind == timeline.KindCollective {
				n++
			}
		}
		if n != 8 || len(rec.Warnings) != 0 || rec.Meta.Backend != "nccl" {
			t.Errorf("%s: %d collectives (want 8), warnings %v, meta %+v", f, n, rec.Warnings, rec.Meta)
		}
	}
}

// BenchmarkCallback measures what a callback costs NCCL's thread: a collective's start and stop,
// and a proxy step's start, state and stop, each queued in the ring; and the drop path, when the
// sender is a whole ring behind.
func BenchmarkCallback(b *testing.B) {
	for _, c := range []struct {
		name string
		kind int
		full bool
	}{{"coll", 0, false}, {"proxy-step", 1, false}, {"ring-full", 0, true}} {
		b.Run(c.name, func(b *testing.B) {
			ns, dropped := benchCallbacks(max(b.N, 1), c.kind, c.full)
			b.ReportMetric(ns, "ns/callback")
			b.ReportMetric(1e9/ns, "callbacks/s")
			b.ReportMetric(float64(dropped)/float64(max(b.N, 1)), "drops/op")
		})
	}
}

// A variable the job sets in its own code before NCCL loads the plugin (PyTorch's
// os.environ["NCCL_HOSTID"] = …) is seen: the rank's host is NCCL's host id, in the recording's
// name and meta. On an H200 two ranks given their own host ids were reported as one host.
func TestHarnessEnvSetByTheJob(t *testing.T) {
	dir := t.TempDir()
	runRanks(t, 1, []string{"XFERTOP_RECORD_DIR=" + dir}, "-iters", "1", "-setenv", "NCCL_HOSTID=fake-host-7")
	files, _ := filepath.Glob(filepath.Join(dir, "*.xfr"))
	if len(files) != 1 || !strings.Contains(filepath.Base(files[0]), "-fake-host-7-") {
		t.Fatalf("recordings %v; want one named for the host id the job set (rank0-fake-host-7-PID.xfr)", files)
	}
	rec, err := recordings.ReadFile(files[0], recordings.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if h := rec.Meta.Extra["nccl.host"]; h != "fake-host-7" {
		t.Errorf("meta nccl.host %q; want fake-host-7", h)
	}
}
