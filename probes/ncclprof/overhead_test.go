//go:build cgo

package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/timeline"
)

// The plugin measures its own cost and sends it with its events: each rank's time per callback
// and share of the NCCL operations' time reach the console, and the analysis (so the report and
// the overview) has a row per rank.
func TestHarnessProfilerCost(t *testing.T) {
	defer goleak.VerifyNone(t)
	evs, labels, runs := job(t, 2, nil, "-iters", "40")
	a := analysis.New(timeline.Meta{})
	samples := map[int32]int{}
	for i := range evs {
		a.Emit(&evs[i])
		if e := evs[i]; e.Kind == timeline.KindDeviceSample && timeline.SampleMetric(e.Sub) == timeline.SampleProfilerCallbackPs {
			samples[e.Device]++
			if e.Bytes <= 0 || e.Op == 0 {
				t.Errorf("a cost sample of %d ps per callback over %d callbacks", e.Bytes, e.Op)
			}
		}
	}
	rows := a.Result(labels).ProfilerCost
	if len(rows) != len(runs) {
		t.Fatalf("cost rows %+v; want one per rank (%d)", rows, len(runs))
	}
	for _, r := range rows {
		// Each rank recorded about 20 callbacks per iteration: 40 iterations, and the comm's.
		if r.Callbacks < 40*10 || r.NsPerCallback <= 0 || r.OverheadPct == nil || *r.OverheadPct <= 0 {
			t.Errorf("rank %d: %+v", r.Device, r)
		}
		t.Logf("rank %d: %.1f ns per callback, %d callbacks, %.2f %% of its collectives' time", r.Device, r.NsPerCallback, r.Callbacks, *r.OverheadPct)
	}
}

// A job started before any console keeps running (its sender drains the ring and counts what it
// could not deliver), and connects when a console appears: the console receives what comes after,
// and the count of what came before as dropped. Attaching needs no restart.
func TestHarnessAttachLater(t *testing.T) {
	defer goleak.VerifyNone(t)
	sock := socketPath(t)
	lib, harness := tools(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, harness, "-lib", lib, "-rank", "0", "-nranks", "1", "-iters", "400", "-pace-us", "5000")
	cmd.Env = append(os.Environ(), "XFERTOP_ATTACH="+sock, "XFERTOP_RING_EVENTS=256")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// No console yet: wait until the job has run a while (its own output says so).
	sc := bufio.NewScanner(stdout)
	before := 0
	for before < 40 && sc.Scan() {
		if strings.HasPrefix(sc.Text(), "coll ") {
			before++
		}
	}
	sink := &collect{}
	srv := startServer(t, sock, sink)
	after := 0
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "coll ") {
			after++
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the job: %v", err)
	}
	waitFor(t, "the rank to end", func() bool { return srv.Quiet(100 * time.Millisecond) })
	srv.Close()
	colls := 0
	for _, e := range sink.events() {
		if e.Kind == timeline.KindCollective {
			colls++
		}
	}
	// The job issued before+after collectives; those of the second before the console connected
	// (it is tried once a second) are lost and counted, the rest arrive.
	if colls == 0 || colls > after || srv.Dropped() == 0 || len(srv.Ranks()) != 1 {
		t.Fatalf("%d collectives issued before the console, %d after; the console received %d, %d dropped, ranks %+v",
			before, after, colls, srv.Dropped(), srv.Ranks())
	}
	t.Logf("%d collectives before the console, %d after: %d received, %d events dropped", before, after, colls, srv.Dropped())
}

// allReduce1MiBNs is the time of a 1 MiB all-reduce the plugin's cost is compared with: NCCL's own
// cost model, Ring/Simple, 15.2 µs + 1 MiB / 240 GB/s (../shared/FACTS.md, "NCCL's own cost model",
// the same formula NCCL's logged 4 MiB time checks with). H100-class links only shorten the
// bandwidth term (4.4 µs here), so this is close to a floor, and the share a ceiling.
const allReduce1MiBNs = 15_200 + 1<<20*1e9/240e9

// benchRun is one harness -scenario bench run: callbacks made, their wall and CPU time on the
// calling thread, allocations meanwhile, all-reduces issued, and the activation mask the plugin
// asked for.
type benchRun struct {
	calls, ns, cpuNs, mallocs, allReduces int64
	mask                                  int64
}

// runBench runs the harness's bench scenario over lib ("null": the harness's null plugin, asking
// for mask) for n all-reduces, with env added to the environment.
func runBench(t testing.TB, harness, lib string, n int, mask int64, env ...string) benchRun {
	t.Helper()
	cmd := exec.Command(harness, "-lib", lib, "-rank", "0", "-nranks", "1", "-scenario", "bench", "-iters", fmt.Sprint(n),
		"-mask", fmt.Sprint(mask))
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("harness -lib %s: %v\n%s", lib, err, out)
	}
	var r benchRun
	for _, l := range strings.Split(string(out), "\n") {
		var v int
		if _, err := fmt.Sscanf(l, "init v%d result 0 mask %v", &v, &r.mask); err == nil {
			continue
		}
		if _, err := fmt.Sscanf(l, "bench calls %d ns %d mallocs %d allreduces %d cpu_ns %d", &r.calls, &r.ns, &r.mallocs, &r.allReduces, &r.cpuNs); err == nil {
			break
		}
	}
	if r.calls == 0 || r.allReduces == 0 {
		t.Fatalf("harness -lib %s: no bench line:\n%s", lib, out)
	}
	return r
}

// The callbacks NCCL's core makes per all-reduce (harness -scenario bench: one all-reduce in its
// own implicit group, two kernel channels, no proxy events) at each event level: the default asks
// for the collective and its kernel channels only, so NCCL starts the API events and the group
// above them (one callback each: the plugin returns no handle) and makes no kernel launch events.
func TestHarnessCallbacksPerAllReduce(t *testing.T) {
	_, harness := tools(t)
	lib, _ := tools(t)
	for _, c := range []struct {
		level string
		want  int64
	}{
		{"", 11}, {"coll", 11}, {"api", 12}, {"kernel", 18}, {"all", 18},
	} {
		r := runBench(t, harness, lib, 100, 0, "XFERTOP_NCCL_EVENTS="+c.level, "XFERTOP_ATTACH="+filepath.Join(t.TempDir(), "none.sock"))
		if got := r.calls / r.allReduces; got != c.want || r.calls%r.allReduces != 0 {
			t.Errorf("level %q: %d callbacks over %d all-reduces; want %d each", c.level, r.calls, r.allReduces, c.want)
		}
	}
}

// BenchmarkHarness: the plugin's cost as NCCL's thread sees it, through the built library and a
// console, for NCCL 2.31's sequence of callbacks per all-reduce at the default level (harness
// -scenario bench with 2 kernel channels: 11 callbacks, 18 at the kernel level): CPU nanoseconds
// per callback on the calling thread (its wall time includes other processes' turns on a loaded
// machine), allocations per callback (every malloc in the process on the calling thread while
// timed), callbacks per all-reduce, and the share of a 1 MiB all-reduce's time they take, both
// as timed (with the harness's own part: building each descriptor as NCCL's core does, and the
// call) and net of the harness's own part (the same sequence through the harness's null plugin,
// in the same run). XFERTOP_BENCH_BASELINE=path/to/another/libnccl-profiler-xfertop.so adds the
// same measures of that library (an earlier build, say) to the run, for a ratio on one machine.
//
//	go test -run XXX -bench Harness -benchtime 100000x -count 5 ./probes/ncclprof | benchstat -
func BenchmarkHarness(b *testing.B) {
	lib, harness := tools(b)
	sock := socketPath(b)
	srv := startServer(b, sock)
	defer srv.Close()
	libs := [][2]string{{"plugin", lib}}
	if base := os.Getenv("XFERTOP_BENCH_BASELINE"); base != "" {
		libs = append(libs, [2]string{"baseline", base})
	}
	for _, l := range libs {
		b.Run(l[0], func(b *testing.B) {
			n := max(b.N, 1000)
			r := runBench(b, harness, l[1], n, 0, "XFERTOP_ATTACH="+sock)
			null := runBench(b, harness, "null", n, r.mask)
			perAR := float64(r.calls) / float64(r.allReduces)
			arNs := float64(r.cpuNs) / float64(r.allReduces)
			netNs := arNs - float64(null.cpuNs)/float64(null.allReduces)
			b.ReportMetric(float64(r.cpuNs)/float64(r.calls), "ns/callback")
			b.ReportMetric(float64(r.ns)/float64(r.calls), "wall-ns/callback")
			b.ReportMetric(float64(r.mallocs)/float64(r.calls), "allocs/callback")
			b.ReportMetric(perAR, "callbacks/allreduce")
			b.ReportMetric(arNs, "ns/allreduce")
			b.ReportMetric(arNs/allReduce1MiBNs*100, "%-of-1MiB-allreduce")
			b.ReportMetric(netNs/allReduce1MiBNs*100, "net-%-of-1MiB-allreduce")
			// The null plugin drops nothing: callbacks it got and the plugin did not are events the
			// plugin dropped (a full ring: the sender fell behind), whose callbacks took the cheap
			// drop path and NCCL's further calls for them were never made.
			dropped := float64(null.calls-r.calls) / float64(r.allReduces)
			b.ReportMetric(dropped, "dropped-callbacks/allreduce")
			if dropped > 0 {
				b.Logf("%s: %.2f callbacks per all-reduce missing: the ring filled and events were dropped, so the times are low", l[0], dropped)
			}
		})
	}
}

// A job too short for the hash to pick any of its callbacks (one all-reduce: a rank makes about
// 20) still reports the plugin's cost: the first callbacks of each kind (start, stop, state) are
// timed too. Each of four ranks must report it; with only one callback in 64 timed, most would not
// (each with a chance of about 3 in 4).
func TestHarnessProfilerCostShortJob(t *testing.T) {
	defer goleak.VerifyNone(t)
	evs, labels, runs := job(t, 4, nil, "-iters", "1")
	a := analysis.New(timeline.Meta{})
	for i := range evs {
		a.Emit(&evs[i])
	}
	rows := a.Result(labels).ProfilerCost
	if len(rows) != len(runs) {
		t.Fatalf("cost rows %+v; want one per rank (%d) after one all-reduce", rows, len(runs))
	}
	for _, r := range rows {
		if r.Callbacks <= 0 || r.NsPerCallback <= 0 {
			t.Errorf("rank %d: %+v", r.Device, r)
		}
	}
}
