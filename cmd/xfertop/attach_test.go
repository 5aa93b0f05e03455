package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/xfertop/xfertop/attach"
	"github.com/xfertop/xfertop/join"
	"github.com/xfertop/xfertop/probes/ncclprof/fold"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/timeline"
)

func TestAttachAndPluginCLI(t *testing.T) {
	lib := filepath.Join(t.TempDir(), PluginName)
	if err := os.WriteFile(lib, []byte("not really"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XFERTOP_PLUGIN", lib)
	code, out, _ := runCLI(t, "plugin")
	if code != exitOK || strings.TrimSpace(out) != lib {
		t.Errorf("plugin: %d %q, want %s", code, out, lib)
	}
	t.Setenv("XFERTOP_PLUGIN", filepath.Join(t.TempDir(), "absent.so"))
	t.Chdir(t.TempDir())
	if code, _, errs := runCLI(t, "plugin"); code != exitFailure || !strings.Contains(errs, "go build -buildmode=c-shared") {
		t.Errorf("plugin without a library: %d %q", code, errs)
	}
	for _, c := range []struct {
		args []string
		has  string
	}{
		{[]string{"attach", "--socket", "tcp:nohost"}, "--socket"},
		// Beyond loopback without --expose: the ranks' port has no authentication (listen refuses
		// the same without TLS and a token).
		{[]string{"attach", "--headless", "--socket", "tcp:0.0.0.0:1"}, "no authentication"},
		{[]string{"attach", "--headless", "--socket", "tcp:10.0.0.2:1"}, "--expose"},
		{[]string{"attach", "--hang-timeout", "-1s"}, "--hang-timeout"},
		{[]string{"attach", "extra"}, `unexpected argument "extra"`},
		{[]string{"plugin", "x"}, "takes no arguments"},
	} {
		if code, _, errs := runCLI(t, c.args...); code != exitUsage || !strings.Contains(errs, c.has) {
			t.Errorf("%v: %d %q, want status 2 naming %s", c.args, code, errs, c.has)
		}
	}
}

// rankStream sends what a rank's plugin sends: its communicator, the collectives it posted, and
// those that finished.
func rankStream(t *testing.T, sock string, rank int, finished int) {
	c, err := attach.Dial(attach.Addr{Network: "unix", Address: sock}, time.Second)
	if err != nil {
		t.Error(err)
		return
	}
	defer c.Close()
	w, _ := recordings.NewStreamWriter("rank", c)
	_ = w.WriteMeta(recordings.Meta{EpochUnixNs: time.Now().UnixNano(), Extra: map[string]string{"nccl.host": "h", "nccl.rank": "0"}})
	strs := timeline.NewStrings()
	posted := strs.ID(join.PostedLabel)
	evs := []timeline.Event{{Kind: timeline.KindCommInit, Device: int32(rank), Peer: -1, Comm: 7, Aux: uint32(rank), Ranks: 2}}
	for seq := range 3 {
		op := fold.CollOpID(7, "AllReduce", uint64(seq))
		if seq > finished && rank == 1 {
			break // rank 1 never posts it
		}
		evs = append(evs, timeline.Event{Kind: timeline.KindMark, Label: posted, Device: int32(rank), Peer: int32(rank), Op: op, Comm: 7, Ranks: 2,
			Aux: uint32(seq), Sub: uint8(timeline.CollAllReduce)})
		if seq <= finished {
			start := int64(seq) * 1e6
			evs = append(evs, timeline.Event{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Start: start, End: start + 1e5,
				Bytes: 1 << 20, Op: op, Device: int32(rank), Peer: -1, Ranks: 2, Comm: 7, Stream: 1, Aux: timeline.PackNCCL(timeline.AlgoRing, timeline.ProtoSimple, 4)})
		}
	}
	_ = w.WriteStrings(1, strs.All()[1:])
	_ = w.WriteEvents(evs)
	_ = w.Close()
}

func TestAttachHeadless(t *testing.T) {
	for _, c := range []struct {
		name     string
		finished int
		code     int
		count    int
		alert    string
	}{
		{"job ends", 2, exitOK, 3, ""},
		// Rank 0 posts the second and third all-reduces, rank 1 neither: the diagnosis names the
		// second (the third is queued behind the same hang) and rank 1 as never entering it.
		{"hang", 0, exitAlert, 1, "all_reduce #2 on communicator 7: 1 rank waited"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sock, done := attachInBackground(t, "--headless", "--json", "--linger", "700ms", "--hang-timeout", "300ms")
			rankStream(t, sock, 0, c.finished)
			rankStream(t, sock, 1, c.finished)
			r := <-done
			if r.code != c.code || !strings.Contains(r.err, "waiting for NCCL ranks on "+sock) {
				t.Fatalf("status %d (want %d), stderr %q", r.code, c.code, r.err)
			}
			var rep struct {
				Collectives []struct {
					Op        string `json:"op"`
					Ranks     int    `json:"ranks"`
					Count     int    `json:"count"`
					AlgoProto string `json:"algo_proto"`
				} `json:"collectives"`
				Alerts []struct {
					Message string `json:"message"`
				} `json:"alerts"`
				Findings []struct {
					Kind     string `json:"kind"`
					Rank     *int32 `json:"rank"`
					Evidence string `json:"evidence"`
				} `json:"findings"`
			}
			if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
				t.Fatalf("report: %v\n%s", err, r.out)
			}
			rows := rep.Collectives
			if len(rows) != 1 || rows[0].Op != "all_reduce" || rows[0].Ranks != 2 || rows[0].Count != c.count || rows[0].AlgoProto != "Ring_Simple" {
				t.Errorf("collectives %+v, want %d all_reduce instances over 2 ranks", rows, c.count)
			}
			// The verdict is the diagnosis's finding, not an alert of attach's own.
			if len(rep.Alerts) != 0 {
				t.Errorf("alerts %+v; want none (hangs are findings)", rep.Alerts)
			}
			if c.alert == "" && len(rep.Findings) != 0 {
				t.Errorf("findings %+v; want none", rep.Findings)
			}
			if c.alert != "" {
				f := rep.Findings
				if len(f) != 1 || f[0].Kind != "hang" || f[0].Rank == nil || *f[0].Rank != 1 ||
					!strings.Contains(f[0].Evidence, c.alert) || !strings.Contains(f[0].Evidence, "rank 1 never entered it") {
					t.Errorf("findings %+v, want one hang naming rank 1 and saying %q", f, c.alert)
				}
			}
		})
	}
}

// writeRankRecording writes what the plugin records for one rank under XFERTOP_RECORD_DIR: two
// all-reduces of a 2-rank communicator, on the rank's own clock (its epoch on the wall clock).
func writeRankRecording(t *testing.T, path string, rank, pid int, epoch int64) {
	t.Helper()
	writeRankEnded(t, path, rank, pid, epoch, "", 0)
}

// writeRankEnded writes a rank's recording as writeRankRecording does, whose run ended as ended
// says ("" when it did not end early) and whose plugin dropped dropped events.
func writeRankEnded(t *testing.T, path string, rank, pid int, epoch int64, ended string, dropped int64) {
	t.Helper()
	w, err := recordings.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	evs := []timeline.Event{{Kind: timeline.KindCommInit, Device: int32(rank), Peer: -1, Comm: 7, Aux: uint32(rank), Ranks: 2, Label: 1, Queued: -1}}
	for seq := range 2 {
		start := int64(seq)*1e6 + int64(rank)*1e4
		evs = append(evs, timeline.Event{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Start: start, End: start + 1e5,
			Bytes: 1 << 20, Op: fold.CollOpID(7, "AllReduce", uint64(seq)), Device: int32(rank), Peer: -1, Ranks: 2, Comm: 7, Stream: 1, Queued: -1})
	}
	for _, err := range []error{
		w.WriteMeta(recordings.Meta{Source: "nccl profiler plugin", Backend: "nccl", Topology: "unknown", IdleMode: timeline.IdleEngine,
			EpochUnixNs: epoch, Extra: map[string]string{"nccl.host": "h", "nccl.pid": fmt.Sprint(pid), "nccl.rank": fmt.Sprint(rank)}}),
		w.WriteStrings(1, []string{"comm world"}), w.WriteEvents(evs),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if dropped > 0 {
		if err := w.WriteDropped(dropped); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteOutcome([][2]string{{"ended", ended}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// replay, analyze and convert take a job's per-rank recordings, as files or their directory, and
// merge them; recordings that are not one job's are refused, naming the file.
func TestRankRecordingsMerged(t *testing.T) {
	dir := t.TempDir()
	r0, r1 := filepath.Join(dir, "rank0-h-10.xfr"), filepath.Join(dir, "rank1-h-11.xfr")
	writeRankRecording(t, r0, 0, 10, 5e9)
	writeRankRecording(t, r1, 1, 11, 5e9+3e3) // started 3 µs later
	other := t.TempDir()
	again := filepath.Join(other, "rank1-h-12.xfr")
	writeRankRecording(t, again, 1, 12, 5e9)
	damaged := filepath.Join(other, "damaged.xfr")
	data, _ := os.ReadFile(r1)
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(damaged, data, 0o644); err != nil {
		t.Fatal(err)
	}
	merged := filepath.Join(t.TempDir(), "job.xfr")
	if code, out, errs := runCLI(t, "convert", dir, merged); code != exitOK || !strings.Contains(out, "wrote "+merged) {
		t.Fatalf("convert %s %s: %d %s %s", dir, merged, code, out, errs)
	} else if want := "from " + dir + " (2 per-rank recordings merged)"; !strings.Contains(out, want) || strings.Contains(out, "()") {
		t.Errorf("convert %s %s says %q; want %q", dir, merged, out, want)
	}
	// Rank 1's clock started 3 µs after rank 0's: each instance spans 10 µs + 3 µs + 100 µs.
	want := `"time_ns_p50": 113000`
	for _, args := range [][]string{
		{"replay", dir, "--headless", "--json"},
		{"replay", r0, r1, "--headless", "--json"},
		{"analyze", "--json", dir},
		{"analyze", "--json", r1, r0},
		{"replay", merged, "--headless", "--json"},
	} {
		code, out, errs := runCLI(t, args...)
		if code != exitOK || !strings.Contains(out, `"op": "all_reduce"`) || !strings.Contains(out, `"count": 2`) || !strings.Contains(out, want) {
			t.Errorf("%v: status %d, want two all-reduce instances over 2 ranks with %s\n%s\n%s", args, code, want, out, errs)
		}
	}
	for _, c := range []struct {
		args []string
		has  string
	}{
		{[]string{"replay", r0, r1, again, "--headless"}, again + ": rank 1 again: " + r1 + " already is rank 1"},
		{[]string{"analyze", r0, damaged}, damaged + ": corrupt recording at byte offset"},
	} {
		if code, _, errs := runCLI(t, c.args...); code != exitData || !strings.Contains(errs, c.has) {
			t.Errorf("%v: status %d, stderr %q; want %d naming %q", c.args, code, errs, exitData, c.has)
		}
	}
}

// attach --otlp exports the job's events as run and replay do: a job's two ranks, attached
// headless with --otlp-detail full, reach `xfertop listen` as the same collectives the attach's
// own report counts.
func TestAttachExportsOTLP(t *testing.T) {
	l := startListen(t, "--exit-after-idle", "2s")
	sock, done := attachInBackground(t, "--headless", "--json", "--linger", "700ms", "--otlp", l.grpc, "--otlp-detail", "full", "--otlp-shutdown-timeout", "20s")
	rankStream(t, sock, 0, 2)
	rankStream(t, sock, 1, 2)
	r := <-done
	if r.code != exitOK {
		t.Fatalf("attach exited %d: %s", r.code, r.err)
	}
	var sent report.Report
	if err := json.Unmarshal([]byte(r.out), &sent); err != nil {
		t.Fatalf("attach's report: %v\n%s", err, r.out)
	}
	if x := sent.Export; x == nil || x.SpansExported == 0 || x.SpansExported != x.SpansBuilt || x.SpansDropped+x.EventsDropped != 0 {
		t.Fatalf("attach's export: %+v; want every span built exported", sent.Export)
	}
	got := l.report(t)
	if got.Events != sent.Events || len(got.Collectives) != 1 || len(sent.Collectives) != 1 ||
		got.Collectives[0].Op != "all_reduce" || got.Collectives[0].Count != sent.Collectives[0].Count || got.Collectives[0].Ranks != 2 {
		t.Errorf("listen received %d events, collectives %+v; attach folded %d, %+v", got.Events, got.Collectives, sent.Events, sent.Collectives)
	}
}

// uniquePaths names each file once, however it was spelled.
func TestUniquePaths(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in, want []string
	}{
		{nil, nil},
		{[]string{"/a/p.so", "/b/p.so"}, []string{"/a/p.so", "/b/p.so"}},
		{[]string{"/a/p.so", "/a/p.so", "/a/./p.so"}, []string{"/a/p.so"}},
		{[]string{filepath.Join(wd, "p.so"), "p.so"}, []string{filepath.Join(wd, "p.so")}},
	}
	for _, tc := range tests {
		if got := uniquePaths(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("uniquePaths(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

// Run from the directory that holds it, without a plugin, xfertop plugin names where it looked
// once per place: the binary's directory and the working directory are one.
func TestPluginNotFoundLooksOnce(t *testing.T) {
	bin := commandBinary(t)
	dir := filepath.Dir(bin)
	plugin := filepath.Join(dir, PluginName)
	if _, err := os.Stat(plugin); err == nil {
		t.Skipf("%s exists", plugin)
	}
	cmd := exec.Command(bin, "plugin")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XFERTOP_PLUGIN="+plugin)
	out, _ := cmd.CombinedOutput()
	if want := "(looked at " + plugin + ")\n"; cmd.ProcessState.ExitCode() != exitFailure || !strings.Contains(string(out), want) {
		t.Errorf("exit %d:\n%s\nwant exit %d naming %s once", cmd.ProcessState.ExitCode(), out, exitFailure, plugin)
	}
}

// sendRaw connects to the console and sends b as a rank's whole stream.
func sendRaw(t *testing.T, sock string, b []byte) {
	c, err := attach.Dial(attach.Addr{Network: "unix", Address: sock}, time.Second)
	if err != nil {
		t.Error(err)
		return
	}
	defer c.Close()
	_, _ = c.Write(b)
}

// Broken rank streams are not hidden: each connection's error is printed and counted, and when no
// rank delivered an event the headless attach exits 4; with one good rank beside them it reports
// that rank and exits 0.
func TestAttachHeadlessBrokenRanks(t *testing.T) {
	var good bytes.Buffer
	w, _ := recordings.NewStreamWriter("rank", &good)
	_ = w.WriteMeta(recordings.Meta{EpochUnixNs: time.Now().UnixNano(), Extra: map[string]string{"nccl.host": "h", "nccl.rank": "3"}})
	_ = w.WriteEvents([]timeline.Event{{Kind: timeline.KindCommInit, Device: 3, Peer: -1, Comm: 7, Aux: 3, Ranks: 4}})
	_ = w.Close()
	badSum := bytes.Clone(good.Bytes())
	badSum[len(badSum)-3] ^= 0xff // inside the last chunk's checksum
	garbage := []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	for _, c := range []struct {
		name    string
		streams [][]byte
		code    int
		want    []string
	}{
		{"garbage and a bad checksum", [][]byte{garbage, badSum}, exitData, []string{
			"rank connection 1: ", "rank connection 2: ", "checksum", "2 of 2 rank connections failed", "no rank delivered an event (2 connections, 2 failed)"}},
		{"one good rank beside garbage", [][]byte{good.Bytes(), garbage}, exitOK, []string{
			"rank 3 connected (host h", "rank connection 2: ", "1 of 2 rank connections failed"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sock, done := attachInBackground(t, "--headless", "--json", "--linger", "500ms")
			for _, s := range c.streams {
				sendRaw(t, sock, s)
			}
			r := <-done
			if r.code != c.code {
				t.Errorf("status %d; want %d; stderr %q", r.code, c.code, r.err)
			}
			for _, w := range c.want {
				if !strings.Contains(r.err, w) {
					t.Errorf("stderr %q; want %q", r.err, w)
				}
			}
			if strings.Contains(r.err, "rank -1 connected (host , pid 0)") {
				t.Errorf("stderr %q introduces a connection that never said who it is", r.err)
			}
		})
	}
}

// attachResult is what a headless attach run in the background returned.
type attachResult struct {
	code     int
	out, err string
}

// attachInBackground starts `xfertop attach --socket SOCK ARGS...` on a socket in a fresh short
// directory (a Unix socket's path is bounded, t.TempDir's can be too long) and returns once the
// socket exists (or after 2 s, when the ranks' dial says why); done gives the command's result.
func attachInBackground(t *testing.T, args ...string) (sock string, done <-chan attachResult) {
	t.Helper()
	dir, err := os.MkdirTemp("", "xa")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock = filepath.Join(dir, "s")
	ch := make(chan attachResult, 1)
	go func() {
		code, out, errs := runCLI(t, append([]string{"attach", "--socket", sock}, args...)...)
		ch <- attachResult{code, out, errs}
	}()
	for i := 0; i < 100; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return sock, ch
}

// --hang-timeout 0 is "never", as its help says, not a value refused: a job watched without a
// hang timeout runs to its end.
func TestAttachNoHangTimeout(t *testing.T) {
	sock, done := attachInBackground(t, "--headless", "--json", "--linger", "700ms", "--hang-timeout", "0")
	rankStream(t, sock, 0, 2)
	rankStream(t, sock, 1, 2)
	r := <-done
	if r.code != exitOK || !strings.Contains(r.out, `"all_reduce"`) {
		t.Fatalf("status %d, stderr %q, report %.300q", r.code, r.err, r.out)
	}
}
