package session

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/timeline"
)

// firstColl keeps the start of each device's first collective.
type firstColl map[int32]int64

func (f firstColl) Emit(e *timeline.Event) {
	if e.Kind != timeline.KindCollective {
		return
	}
	if t, ok := f[e.Device]; !ok || e.Start < t {
		f[e.Device] = e.Start
	}
}

// A NIC slow from 0 s shows only once the NIC carries traffic, after the communicators' setup:
// the finding is first seen no later than the culprit's first collective, and says the fault may
// have begun before (its first traffic after setup), not that it began then.
func TestOnsetFromFirstTraffic(t *testing.T) {
	f, err := fault.Parse("kind=nic_slow,host=1,nic=3,factor=0.3,at=0s")
	if err != nil {
		t.Fatal(err)
	}
	colls := firstColl{}
	p, err := Prepare(Config{Scenario: "llm-train", Topology: "h100x8x2", Steps: 3, Seed: 1, Faults: []fault.Fault{f}}, colls)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	r := p.Report(out)
	if len(r.Findings) == 0 || r.Findings[0].Culprit != "host 1 GPU 3 NIC" {
		t.Fatalf("findings %+v; want the NIC of host 1 GPU 3 first", r.Findings)
	}
	x := r.Findings[0]
	first, ok := colls[11]
	if !ok {
		t.Fatal("rank 11 ran no collective")
	}
	if x.OnsetNs > first {
		t.Errorf("first seen at %d ns, after rank 11's first collective at %d ns", x.OnsetNs, first)
	}
	if !x.FromFirstTraffic {
		t.Errorf("finding %+v: want it marked as seen in the first traffic after setup", x)
	}
}

// A fault that begins after the first step compared is not put down to the first traffic.
func TestOnsetLaterFault(t *testing.T) {
	f, err := fault.Parse("kind=gpu_slow,host=1,gpu=5,factor=0.6,at=1.1s")
	if err != nil {
		t.Fatal(err)
	}
	r, _ := runReport(t, Config{Scenario: "llm-train", Topology: "h100x8x2", Steps: 4, Seed: 1, Faults: []fault.Fault{f}})
	if len(r.Findings) == 0 || r.Findings[0].Culprit != "rank 13 (host 1 GPU 5)" {
		t.Fatalf("findings %+v; want rank 13 first", r.Findings)
	}
	if x := r.Findings[0]; x.FromFirstTraffic || x.OnsetNs < 1_100_000_000 {
		t.Errorf("finding %+v: want it first seen at or after 1.1 s, not in the first traffic", x)
	}
}

// A console replay sought past the first evidence of a fault still says the finding was first
// seen there, as the headless report does: the diagnosis is rebuilt from the recording read again
// up to the seek, not started at the seek (nor does it depend on what the console looked at).
func TestReplaySeekKeepsOnset(t *testing.T) {
	_, whole, rs, wait := slowNICReplay(t)
	want := whole.Report().Findings
	for _, to := range []int64{want[0].OnsetNs + 300_000_000, want[0].OnsetNs - 200_000_000, 0} {
		rs.SeekTo(to)
		wait()
		_, res := rs.Analysed(nil)
		if len(res.Findings) == 0 {
			t.Fatalf("sought to %d ns: no findings; the report's first is %+v", to, want[0])
		}
		if got := res.Findings[0]; got.Rank != *want[0].Rank || got.Onset != want[0].OnsetNs {
			t.Errorf("sought to %d ns: the first finding is rank %d first seen at %d ns; the report's rank %d at %d ns",
				to, got.Rank, got.Onset, *want[0].Rank, want[0].OnsetNs)
		}
	}
}

// A headless replay from T (replay --from T) and a console replay sought to T name the same
// findings first seen at the same time, the one the whole recording's report gives: when the fault
// first showed, not where either began reading.
func TestReplayFromAgreesWithSeek(t *testing.T) {
	path, whole, rs, wait := slowNICReplay(t)
	want := whole.Report().Findings
	for _, from := range []int64{want[0].OnsetNs + 300_000_000, want[0].OnsetNs - 200_000_000} {
		t.Run(time.Duration(from).String(), func(t *testing.T) {
			rs.SeekTo(from)
			wait()
			_, res := rs.Analysed(nil)
			hl, err := Replay(t.Context(), ReplayConfig{Path: path, From: time.Duration(from)})
			if err != nil {
				t.Fatal(err)
			}
			rep := hl.Report()
			con := report.Build(res, rs.Meta, report.Run{}).Findings // the console's, laid out as the report's
			if len(con) == 0 || len(rep.Findings) != len(con) {
				t.Fatalf("from %d ns: the console names %d findings, replay --from %d; want as many, and some",
					from, len(con), len(rep.Findings))
			}
			for i, got := range rep.Findings {
				c := con[i]
				if got.Kind != c.Kind || got.Culprit != c.Culprit || got.OnsetNs != c.OnsetNs || got.Step != c.Step {
					t.Errorf("from %d ns, finding %d: replay --from says %s %s first seen at %d ns (step %d); the console %s %s at %d ns (step %d)",
						from, i, got.Kind, got.Culprit, got.OnsetNs, got.Step, c.Kind, c.Culprit, c.OnsetNs, c.Step)
				}
			}
			if got := rep.Findings[0]; got.OnsetNs != want[0].OnsetNs {
				t.Errorf("from %d ns: replay --from's first finding first seen at %d ns; the whole recording's at %d ns",
					from, got.OnsetNs, want[0].OnsetNs)
			}
			if rep.DurationNs > whole.Report().DurationNs-from+1 {
				t.Errorf("from %d ns: replay --from covers %d ns; want the time from %d ns on only (the whole is %d ns)",
					from, rep.DurationNs, from, whole.Report().DurationNs)
			}
		})
	}
}

// slowNICReplay records llm-train with a NIC slowed from 1.5 s, checks its whole replay finds it
// first seen at 1.5 s or later, and starts a console replay of it, run to its end; wait waits for
// that replay to end again (after a seek).
func slowNICReplay(t *testing.T) (path string, whole *Replayed, rs *ReplaySource, wait func()) {
	t.Helper()
	f, err := fault.Parse("kind=nic_slow,host=1,nic=3,factor=0.3,at=1.5s")
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), "slow.xfr")
	runReport(t, Config{Scenario: "llm-train", Topology: "h100x8x2", Steps: 6, Seed: 1, Faults: []fault.Fault{f}, Record: path})
	whole, err = Replay(t.Context(), ReplayConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if want := whole.Report().Findings; len(want) == 0 || want[0].Rank == nil || want[0].OnsetNs < 1_500_000_000 {
		t.Fatalf("the report's findings %+v: want a slow NIC first seen at 1.5 s or later", want)
	}
	rs, err = StartReplay(t.Context(), ReplayConfig{Path: path}, 1<<22)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rs.Stop)
	wait = func() {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); !rs.Done() && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		if !rs.Done() {
			t.Fatal("the replay did not end")
		}
	}
	wait()
	return path, whole, rs, wait
}
