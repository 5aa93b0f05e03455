//go:build cgo

package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
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

// BenchmarkHarness: the plugin's cost as NCCL's thread sees it, through the built library and a
// console, for NCCL 2.31's sequence of callbacks per all-reduce (harness -scenario bench: 18 of
// them at the default level with 2 kernel channels): nanoseconds per callback, allocations per
// callback (every malloc in the process on the calling thread while timed), and the share of a
// 1 MiB all-reduce's time its callbacks take.
//
//	go test -run XXX -bench Harness -benchtime 200000x -count 5 ./probes/ncclprof | benchstat -
func BenchmarkHarness(b *testing.B) {
	lib, harness := tools(b)
	sock := socketPath(b)
	srv := startServer(b, sock)
	defer srv.Close()
	n := max(b.N, 1000)
	out, err := exec.Command(harness, "-lib", lib, "-rank", "0", "-nranks", "1", "-scenario", "bench", "-iters", fmt.Sprint(n)).CombinedOutput()
	if err != nil {
		b.Fatalf("harness: %v\n%s", err, out)
	}
	var calls, ns, mallocs, ars int64
	for _, l := range strings.Split(string(out), "\n") {
		if _, err := fmt.Sscanf(l, "bench calls %d ns %d mallocs %d allreduces %d", &calls, &ns, &mallocs, &ars); err == nil {
			break
		}
	}
	if calls == 0 {
		b.Fatalf("no bench line:\n%s", out)
	}
	perCall := float64(ns) / float64(calls)
	perAR := float64(calls) / float64(ars)
	b.ReportMetric(perCall, "ns/callback")
	b.ReportMetric(float64(mallocs)/float64(calls), "allocs/callback")
	b.ReportMetric(perAR, "callbacks/allreduce")
	b.ReportMetric(perAR*perCall/allReduce1MiBNs*100, "%-of-1MiB-allreduce")
}
