//go:build cgo

package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xfertop/xfertop/timeline"
)

// job runs one harness job of n ranks against a console and returns what the console merged.
func job(t *testing.T, n int, env []string, args ...string) ([]timeline.Event, *timeline.Strings, []rankRun) {
	t.Helper()
	sock := socketPath(t)
	sink := &collect{}
	srv := startServer(t, sock, sink)
	runs := runRanks(t, n, append([]string{"XFERTOP_ATTACH=" + sock}, env...), args...)
	waitFor(t, "every rank to end", func() bool { return srv.Quiet(100 * time.Millisecond) })
	srv.Close()
	for _, run := range runs {
		want := parseIssued(t, run.lines)
		if got := received(sink.events(), srv.Strings(), int32(run.rank)); !slices.Equal(got, want) {
			t.Errorf("rank %d: the console received\n%v\nthe harness issued\n%v", run.rank, got, want)
		}
	}
	return sink.events(), srv.Strings(), runs
}

// labelsOf returns the labels of the events of kind k, in order.
func labelsOf(evs []timeline.Event, labels *timeline.Strings, k timeline.Kind) []string {
	var out []string
	for _, e := range evs {
		if e.Kind == k {
			out = append(out, labels.Lookup(e.Label))
		}
	}
	return out
}

// One test per profiler interface, each driven as the NCCL releases that use it drive it: the
// harness takes the interface NCCL's loader would (newest first), and the console must receive
// what that version carries and nothing it does not.
func TestHarnessProfilerVersions(t *testing.T) {
	defer goleak.VerifyNone(t)
	initLine := func(t *testing.T, runs []rankRun, v int) {
		t.Helper()
		for _, r := range runs {
			if len(r.lines) == 0 || !strings.HasPrefix(r.lines[0], fmt.Sprintf("init v%d result 0", v)) {
				t.Fatalf("rank %d: want the plugin loaded through v%d: %s", r.rank, v, r.out)
			}
		}
	}
	t.Run("v4-nccl2.27", func(t *testing.T) {
		evs, labels, runs := job(t, 2, nil, "-lookup", "4", "-iters", "2", "-tag", "42")
		initLine(t, runs, 4)
		if n := len(labelsOf(evs, labels, timeline.KindRuntime)); n != 0 {
			t.Errorf("v4 has no API events, yet %d runtime events arrived", n)
		}
		for _, l := range labelsOf(evs, labels, timeline.KindCollective) {
			if l != "RING SIMPLE 2ch" {
				t.Errorf("collective label %q; want RING SIMPLE 2ch (no tag before v7)", l)
			}
		}
	})
	t.Run("v5-nccl2.28", func(t *testing.T) {
		// API events are the api and kernel levels' (the default asks for collectives only).
		evs, labels, runs := job(t, 2, []string{"XFERTOP_NCCL_EVENTS=kernel"}, "-lookup", "5,4", "-iters", "2")
		initLine(t, runs, 5)
		if !slices.Contains(labelsOf(evs, labels, timeline.KindRuntime), "ncclAllReduce") {
			t.Error("no ncclAllReduce API call (runtime) event from v5")
		}
	})
	t.Run("v6-nccl2.29-copy-engine", func(t *testing.T) {
		evs, labels, runs := job(t, 2, nil, "-lookup", "6,5,4", "-scenario", "ce", "-iters", "2", "-tag", "42")
		initLine(t, runs, 6)
		got := labelsOf(evs, labels, timeline.KindCollective)
		if len(got) != 8 {
			t.Fatalf("%d collectives from 2 ranks × 2 iterations × 2 copy-engine all-gathers: %q", len(got), got)
		}
		for _, l := range got {
			if l != "copy engine MC" {
				t.Errorf("copy-engine collective labelled %q; want copy engine MC (no tag before v7)", l)
			}
		}
		checkOps(t, evs, 2)
	})
	t.Run("v7-nccl2.31", func(t *testing.T) {
		// Kernel phases are the kernel level's (the default asks for collectives only).
		evs, labels, runs := job(t, 2, []string{"XFERTOP_NCCL_EVENTS=kernel"}, "-lookup", "7,6,5,4", "-iters", "2", "-tag", "42", "-sym", "1")
		initLine(t, runs, 7)
		colls := labelsOf(evs, labels, timeline.KindCollective)
		if len(colls) != 8 {
			t.Fatalf("%d collectives; want 8", len(colls))
		}
		for _, l := range colls {
			if l != "sym AllReduce_AGxLLMC_R 2ch tag 42" {
				t.Errorf("collective label %q; want the symmetric kernel's variant and the call's tag", l)
			}
		}
		checkPhases(t, evs, labels)
		evs, labels, _ = job(t, 2, nil, "-scenario", "sendrecv", "-iters", "2", "-tag", "7")
		for _, k := range []timeline.Kind{timeline.KindSend, timeline.KindRecv} {
			for _, l := range labelsOf(evs, labels, k) {
				if l != "Send tag 7" && l != "Recv tag 7" {
					t.Errorf("%s labelled %q; want its API call and tag", k, l)
				}
			}
		}
		// Named tags (XFERTOP_NCCL_TAGS), as the job's phases are known to its people.
		evs, labels, _ = job(t, 2, []string{"XFERTOP_NCCL_TAGS=41=fwd,42=tp grads"}, "-iters", "1", "-tag", "42")
		for _, l := range labelsOf(evs, labels, timeline.KindCollective) {
			if l != "RING SIMPLE 2ch tag tp grads" {
				t.Errorf("collective labelled %q; want its tag's name", l)
			}
		}
		evs, labels, _ = job(t, 2, nil, "-scenario", "ce", "-iters", "1", "-tag", "9")
		for _, l := range labelsOf(evs, labels, timeline.KindCollective) {
			if l != "copy engine MC tag 9" {
				t.Errorf("copy-engine collective labelled %q; want copy engine MC tag 9", l)
			}
		}
	})
}

// checkPhases: each collective has its three kernel phases, as marks on its stream, with the
// spans the harness's GPU timers give (the union over its two channels: initial_sync 0–11 µs,
// compute 10–105 µs, final_sync 95–110 µs of a kernel of 110 µs), placed inside it.
func checkPhases(t *testing.T, evs []timeline.Event, labels *timeline.Strings) {
	t.Helper()
	want := map[string][2]int64{"kernel phase initial_sync": {0, 11_000}, "kernel phase compute": {10_000, 105_000},
		"kernel phase final_sync": {95_000, 110_000}}
	type key struct {
		dev    int32
		stream uint32
	}
	colls := map[key][]timeline.Event{}
	for _, e := range evs {
		if e.Kind == timeline.KindCollective {
			colls[key{e.Device, e.Stream}] = append(colls[key{e.Device, e.Stream}], e)
		}
	}
	n := 0
	for _, e := range evs {
		span, ok := want[labels.Lookup(e.Label)]
		if e.Kind != timeline.KindMark || !ok {
			continue
		}
		n++
		found := false
		for _, c := range colls[key{e.Device, e.Stream}] {
			found = found || [2]int64{e.Start - c.Start, e.End - c.Start} == span
		}
		if !found {
			t.Errorf("%s %+v: no collective of its stream has it at %v ns of its start", labels.Lookup(e.Label), e, span)
		}
	}
	if n != 3*8 {
		t.Errorf("%d kernel phases; want 3 for each of 8 collectives", n)
	}
}
