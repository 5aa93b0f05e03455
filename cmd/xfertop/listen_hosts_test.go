package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/xfertop/xfertop/receiver"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/units"
)

// splitByHost writes one recording per host of the recording at path, each holding that host's
// events (Event.Host) with the run's description and epoch: what each host's own xfertop records
// of a job that spans hosts. It returns their paths, host 0 first.
func splitByHost(t *testing.T, path string) []string {
	t.Helper()
	r, err := recordings.Open(path, recordings.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	meta := r.Meta()
	hosts := max((meta.Devices+meta.HostGPUs()-1)/meta.HostGPUs(), 1)
	recs := make([]*recordings.Recorder, hosts)
	paths := make([]string, hosts)
	for h := range hosts {
		paths[h] = filepath.Join(t.TempDir(), fmt.Sprintf("host-%d.xfr", h))
		w, err := recordings.Create(paths[h])
		if err != nil {
			t.Fatal(err)
		}
		// The reader's table is the recorders' too: it only grows, and each recorder copies what is new.
		if recs[h], err = recordings.NewRecorder(w, r.Strings(), meta); err != nil {
			t.Fatal(err)
		}
	}
	for r.Next() {
		evs := r.At()
		for i := range evs {
			if h := int(evs[i].Host); h < hosts {
				recs[h].Emit(&evs[i])
			} else {
				t.Fatalf("%s: event %d on host %d; the run has %d hosts", path, i, h, hosts)
			}
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	for h, rec := range recs {
		if err := rec.Close(nil); err != nil || rec.Dropped() != 0 {
			t.Fatalf("host %d's recording: %v, %d events dropped", h, err, rec.Dropped())
		}
	}
	return paths
}

// replayTo replays each recording into endpoint at once, as each host's xfertop would export its
// share, and returns their reports (the export's counters in Export). It may run on a goroutine
// of its own: a failure is reported with t.Errorf, and the reports are then nil.
func replayTo(t *testing.T, endpoint string, paths []string, more ...string) []*report.Report {
	out := make([]*report.Report, len(paths))
	var wg sync.WaitGroup
	for i, p := range paths {
		wg.Go(func() {
			var stdout, stderr bytes.Buffer
			args := append([]string{"replay", p, "--headless", "--json", "--otlp", endpoint, "--otlp-detail", "full", "--otlp-shutdown-timeout", "30s"}, more...)
			if code := xfertop(context.Background(), args, &stdout, &stderr); code != exitOK && code != exitAlert {
				t.Errorf("replay %s: exit %d: %s", p, code, stderr.String())
				return
			}
			var r report.Report
			if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
				t.Errorf("replay %s's report: %v", p, err)
				return
			}
			out[i] = &r
		})
	}
	wg.Wait()
	for _, r := range out {
		if r == nil {
			return nil
		}
	}
	return out
}

// recordRun runs args headless with a recording and returns the report and the recording's path.
func recordRun(t *testing.T, args ...string) (*report.Report, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.xfr")
	return runReport(t, append(args, "--record", path)...), path
}

// Each host of h100x8x2 exports its own share (a replay of the events of its devices) to one
// listener: the merged report is the single-process run's.
func TestListenHostsMerge(t *testing.T) {
	want, path := recordRun(t, "--scenario", "crosshost")
	l := startListen(t)
	sent := replayTo(t, l.grpc, splitByHost(t, path))
	if sent == nil {
		t.FailNow()
	}
	got := l.stop(t)
	checkMerged(t, want, got, sent)
}

// checkMerged compares the merged report with the run's, and the counts of what was sent with what
// was received.
func checkMerged(t *testing.T, want, got *report.Report, sent []*report.Report) {
	t.Helper()
	var built int64
	for _, s := range sent {
		if s.Export == nil || s.Export.SpansDropped != 0 || s.Export.EventsDropped != 0 {
			t.Fatalf("a host's export lost data: %+v", s.Export)
		}
		built += s.Export.SpansBuilt
	}
	if got.Receive == nil || got.Receive.Lost != 0 || got.Receive.Spans != built || len(got.Receive.Hosts) != len(sent) {
		t.Fatalf("received %+v; want every span the hosts built (%d) from %d hosts, none lost", got.Receive, built, len(sent))
	}
	if a, b := analysisSections(t, want), analysisSections(t, got); a != b {
		t.Errorf("the merged report differs from the single-process run's:\n%s", lineDiff(a, b))
	}
}

// The console's header names each sender with its clock offset as such, and an offset not yet
// estimated (no span received) as unknown.
func TestHostClockLabelled(t *testing.T) {
	cases := []struct {
		h    receiver.Host
		want string
	}{
		{receiver.Host{Name: "host-0", Spans: 10, OffsetNs: -928_000_000}, "host-0 clock offset ≈ -928 ms"},
		{receiver.Host{Name: "host-1", OffsetNs: 1<<63 - 1}, "host-1 clock offset ≈ " + units.Unknown},
	}
	for _, c := range cases {
		if got := hostClock(c.h); got != c.want {
			t.Errorf("hostClock(%+v) = %q; want %q", c.h, got, c.want)
		}
	}
}
