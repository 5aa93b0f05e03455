//go:build cgo

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/xfertop/xfertop/recordings"
)

var xfertopBin struct {
	once sync.Once
	path string
	err  error
}

// xfertop builds the command once per test binary, to run it as a user does.
func xfertop(t *testing.T) string {
	t.Helper()
	tools(t)
	xfertopBin.once.Do(func() {
		xfertopBin.path = filepath.Join(build.dir, "xfertop")
		out, err := exec.Command("go", "build", "-o", xfertopBin.path, "../../cmd/xfertop").CombinedOutput()
		if err != nil {
			xfertopBin.err = fmt.Errorf("go build ./cmd/xfertop: %v\n%s", err, out)
		}
	})
	if xfertopBin.err != nil {
		t.Fatal(xfertopBin.err)
	}
	return xfertopBin.path
}

// One job, watched live and recorded per rank at once: `xfertop replay DIR --headless --json` of
// the recordings prints the report `xfertop attach --headless --json` printed, but for the source
// and the time origin (attach's time 0 is when the console started; the merge's, when the first
// rank did), which shifts every absolute time by one constant.
func TestHarnessReplayMergedEqualsAttach(t *testing.T) {
	bin := xfertop(t)
	sock := socketPath(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	attach := exec.CommandContext(ctx, bin, "attach", "--headless", "--json", "--socket", sock, "--linger", "500ms")
	var live, attachErr bytes.Buffer
	attach.Stdout, attach.Stderr = &live, &attachErr
	if err := attach.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the console's socket", func() bool { _, err := os.Stat(sock); return err == nil })
	runRanks(t, 3, []string{"XFERTOP_ATTACH=" + sock, "XFERTOP_RECORD_DIR=" + dir}, "-scenario", "allreduce", "-iters", "4")
	if err := attach.Wait(); err != nil {
		t.Fatalf("attach: %v\n%s", err, attachErr.String())
	}
	replay := exec.CommandContext(ctx, bin, "replay", dir, "--headless", "--json")
	var merged, replayErr bytes.Buffer
	replay.Stdout, replay.Stderr = &merged, &replayErr
	if err := replay.Run(); err != nil {
		t.Fatalf("replay %s: %v\n%s", dir, err, replayErr.String())
	}
	var a, b map[string]any
	if err := json.Unmarshal(live.Bytes(), &a); err != nil {
		t.Fatalf("attach's report: %v\n%s", err, live.String())
	}
	if err := json.Unmarshal(merged.Bytes(), &b); err != nil {
		t.Fatalf("replay's report: %v\n%s", err, merged.String())
	}
	if cs, _ := a["collectives"].([]any); len(cs) == 0 {
		t.Fatalf("attach reported no collectives:\n%s", live.String())
	}
	delete(a, "source")
	delete(b, "source")
	shift := map[float64]bool{}
	sameReport(t, "", a, b, shift)
	if len(shift) > 1 {
		t.Errorf("absolute times shifted by %d different amounts %v: the ranks' clocks were not aligned alike", len(shift), shift)
	}
}

// sameReport compares two reports decoded from JSON; start_ns fields may differ by a constant,
// collected in shift.
func sameReport(t *testing.T, path string, a, b any, shift map[float64]bool) {
	t.Helper()
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			t.Errorf("%s: attach %v; replay %v", path, a, b)
			return
		}
		for k, v := range x {
			if k == "start_ns" {
				av, _ := v.(float64)
				bv, _ := y[k].(float64)
				shift[av-bv] = true
				continue
			}
			sameReport(t, path+"."+k, v, y[k], shift)
		}
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			t.Errorf("%s: attach %v; replay %v", path, a, b)
			return
		}
		for i := range x {
			sameReport(t, fmt.Sprintf("%s[%d]", path, i), x[i], y[i], shift)
		}
	default:
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: attach %v; replay %v", path, a, b)
		}
	}
}

// relay holds the rank streams that reach a socket until they are delivered to the console: what
// a console started after the job ran sees (or one on a host whose clock is ahead of the ranks'),
// every event before the console's time 0.
type relay struct {
	ln      net.Listener
	mu      sync.Mutex
	streams [][]byte
	wg      sync.WaitGroup
}

func startRelay(t *testing.T, sock string) *relay {
	t.Helper()
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	rl := &relay{ln: ln}
	rl.wg.Add(1)
	go func() {
		defer rl.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			rl.wg.Add(1)
			go func() {
				defer rl.wg.Done()
				b, _ := io.ReadAll(c)
				c.Close()
				rl.mu.Lock()
				rl.streams = append(rl.streams, b)
				rl.mu.Unlock()
			}()
		}
	}()
	t.Cleanup(func() { rl.ln.Close(); rl.wg.Wait() })
	return rl
}

// deliver closes the relay once every stream it accepted has ended, and writes each to the
// console at sock, all connected at once as a job's ranks are.
func (rl *relay) deliver(t *testing.T, sock string) int {
	t.Helper()
	rl.ln.Close()
	rl.wg.Wait()
	var conns []net.Conn
	for range rl.streams {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for i, c := range conns {
		if _, err := c.Write(rl.streams[i]); err != nil {
			t.Fatalf("deliver rank stream %d: %v", i, err)
		}
	}
	for _, c := range conns {
		c.Close()
	}
	return len(conns)
}

// An `attach --record` recording of ranks whose events all lie before the console's time 0 (the
// job ran before the console saw it): `replay` reads every event, as `analyze` does, and prints
// the report attach printed; the console's replay plays them too.
func TestHarnessReplayAttachRecordingBeforeEpoch(t *testing.T) {
	bin := xfertop(t)
	ranksSock, sock := socketPath(t), socketPath(t)
	rl := startRelay(t, ranksSock)
	runRanks(t, 2, []string{"XFERTOP_ATTACH=" + ranksSock}, "-scenario", "allreduce", "-iters", "4")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rec := filepath.Join(t.TempDir(), "attach.xfr")
	att := exec.CommandContext(ctx, bin, "attach", "--headless", "--json", "--record", rec, "--socket", sock, "--linger", "500ms")
	var live, attachErr bytes.Buffer
	att.Stdout, att.Stderr = &live, &attachErr
	if err := att.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the console's socket", func() bool { _, err := os.Stat(sock); return err == nil })
	if n := rl.deliver(t, sock); n != 2 {
		t.Fatalf("the relay took %d rank streams, want 2", n)
	}
	if err := att.Wait(); err != nil {
		t.Fatalf("attach: %v\n%s", err, attachErr.String())
	}
	first, last := recordedSpan(t, rec)
	if last >= 0 {
		t.Fatalf("the recording's events span [%d, %d] ns: the test needs them before the console's time 0", first, last)
	}
	reports := map[string][]byte{"attach": live.Bytes()}
	for _, args := range [][]string{{"analyze", "--json", rec}, {"replay", "--headless", "--json", rec}} {
		cmd := exec.CommandContext(ctx, bin, args...)
		var out, errs bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errs
		if err := cmd.Run(); err != nil {
			t.Fatalf("xfertop %v: %v\n%s", args, err, errs.String())
		}
		reports[args[0]] = out.Bytes()
	}
	decoded := map[string]map[string]any{}
	for name, b := range reports {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s's report: %v\n%s", name, err, b)
		}
		decoded[name] = m
	}
	if cs, _ := decoded["attach"]["collectives"].([]any); len(cs) == 0 {
		t.Fatalf("attach reported no collectives:\n%s", live.String())
	}
	if d, _ := decoded["attach"]["duration_ns"].(float64); d <= 0 {
		t.Errorf("attach's report: duration_ns %v for events over [%d, %d] ns", decoded["attach"]["duration_ns"], first, last)
	}
	if !reflect.DeepEqual(decoded["analyze"], decoded["replay"]) {
		t.Errorf("replay's report differs from analyze's:\nanalyze %s\nreplay %s", reports["analyze"], reports["replay"])
	}
	// The recording's meta is written before any rank connects: it knows no devices yet, and holds
	// attach's stand-in of one host for every rank (gpus_per_host 32768), which attach's own report
	// leaves unsaid. Every figure made from the events is compared.
	// So are the hosts' names, which the ranks give as they connect, after the meta was written:
	// the recording keeps them in a later chunk, and the replay names the hosts as attach did.
	for _, m := range decoded {
		delete(m, "gpus_per_host")
		delete(m, "devices")
	}
	hosts, _ := decoded["attach"]["hosts"].([]any)
	if len(hosts) == 0 {
		t.Errorf("attach's report places no device on a host:\n%s", live.String())
	}
	for _, h := range hosts {
		if h, ok := h.(map[string]any); !ok || h["host_name"] == nil {
			t.Errorf("attach's report names no host for %v: the comparison of names would prove nothing", h)
		}
	}
	shift := map[float64]bool{}
	sameReport(t, "", decoded["attach"], decoded["replay"], shift)
}

// recordedSpan returns the earliest start and the latest end of a recording's events.
func recordedSpan(t *testing.T, path string) (first, last int64) {
	t.Helper()
	r, err := recordings.Open(path, recordings.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	first, last = math.MaxInt64, math.MinInt64
	for r.Next() {
		for _, e := range r.At() {
			first, last = min(first, e.Start), max(last, e.End)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return first, last
}
