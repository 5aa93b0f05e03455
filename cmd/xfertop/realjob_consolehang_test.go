package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xfertop/xfertop/analysis/diagnosis"
	"github.com/xfertop/xfertop/importers"
	"github.com/xfertop/xfertop/session"
	"github.com/xfertop/xfertop/session/manualclock"
	"github.com/xfertop/xfertop/ui"
)

// TestRealJobConsoleFindingsEqualAnalyze: the console replaying the real two-rank job's Flight
// Recorder dumps, looked at every 50 ms of the replay, shows a hang while rank 1's first
// all-reduce is outstanding past the 1 s threshold (it waited 1.6 s for rank 0, then completed),
// and once the replay has played every event its findings are analyze's. Before, the hang the
// live look named stayed after the op completed: "hang: 1 rank stuck inside (1; which holds it:
// unknown) — all_reduce … on communicator 1", where analyze and replay --headless had none.
func TestRealJobConsoleFindingsEqualAnalyze(t *testing.T) {
	files := []string{filepath.Join(realJob, "torch2", "fr", "nccl_trace_rank_0"), filepath.Join(realJob, "torch2", "fr", "nccl_trace_rank_1")}
	code, out, errs := runCLI(t, append([]string{"analyze", "--json"}, files...)...)
	if code != exitOK {
		t.Fatalf("analyze: exit %d: %s", code, errs)
	}
	var rep struct {
		Findings []struct {
			Kind    string `json:"kind"`
			Culprit string `json:"culprit"`
			OnsetNs int64  `json:"onset_ns"`
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range rep.Findings {
		want = append(want, fmt.Sprintf("%s: %s from %d", f.Kind, f.Culprit, f.OnsetNs))
	}

	rec, err := importToRecording(files, importers.Options{}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(filepath.Dir(rec))
	// A manual clock paces the replay, so every look is at the position asked, whatever the load.
	clk := manualclock.New(time.Unix(1_000_000, 0))
	rs, err := session.StartReplay(context.Background(), session.ReplayConfig{Path: rec, Speed: 1, Clock: clk}, 1<<22)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Stop()
	m := console(replaySource{r: rs, info: ui.SourceInfo{Replay: true, Name: rec, Meta: rs.Meta, Duration: rs.Duration}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := clk.WaitSleeper(ctx, 0); err != nil {
		t.Fatal("the replay never waited for its first op:", err)
	}
	findings := func() []diagnosis.Finding { return m.Result().Findings }
	sawHang := false
	for deadline := time.Now().Add(time.Minute); !rs.Done() && time.Now().Before(deadline); {
		seq := clk.Seq()
		if clk.Advance(50 * time.Millisecond) {
			for settle := time.Now().Add(10 * time.Second); !rs.Done() && time.Now().Before(settle); time.Sleep(100 * time.Microsecond) {
				if woke(clk, seq) {
					break
				}
			}
		}
		refreshed(m) // a look: the ops in flight at this position go to the diagnosis
		for _, f := range findings() {
			sawHang = sawHang || f.Kind == diagnosis.Hang
		}
	}
	if !rs.Done() {
		t.Fatal("the replay did not reach its end")
	}
	// Without a look while rank 1 waited, this test would show nothing: the live hang is what it
	// is about.
	if !sawHang {
		t.Error("no look during the replay showed a hang: rank 1's all-reduce, outstanding 1.6 s, was never looked at past 1 s")
	}
	refreshed(m)
	refreshed(m)
	var got []string
	for _, f := range findings() {
		got = append(got, fmt.Sprintf("%s: %s from %d", f.Kind, f.Culprit(), f.Onset))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the console's findings at the replay's end:\n%q\nanalyze's:\n%q", got, want)
	}
}
