package session

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/scenario"
	"github.com/xfertop/xfertop/timeline"
)

var update = flag.Bool("update", false, "rewrite recordings/samples from the built-in scenarios")

// builtins are every built-in scenario: a new one is recorded, replayed and shipped as a sample
// without this list changing.
var builtins = scenario.BuiltinNames()

func reportJSON(t *testing.T, r *report.Report) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Replayed headless, a recording gives the same report as the run that made it, for every built-in.
func TestReplayGivesTheSameReport(t *testing.T) {
	dir := t.TempDir()
	for _, name := range builtins {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name+".xfr")
			st := timeline.NewStore(nil)
			p, err := Prepare(Config{Scenario: name, Steps: 3, Record: path}, st)
			if err != nil {
				t.Fatal(err)
			}
			out, err := p.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			live := reportJSON(t, p.Report(out))
			rp, err := Replay(context.Background(), ReplayConfig{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			if len(rp.Warnings) != 0 {
				t.Errorf("warnings: %v", rp.Warnings)
			}
			replayed := reportJSON(t, rp.Report())
			if live != replayed {
				t.Errorf("replayed report differs from the live one:\nlive   %s\nreplay %s", live, replayed)
			}
			fi, _ := os.Stat(path)
			perEvent := float64(fi.Size()) / float64(st.Len())
			t.Logf("%s: %d events, %d bytes, %.1f bytes/event", name, st.Len(), fi.Size(), perEvent)
			if perEvent > 24 {
				t.Errorf("%.1f bytes per event; the format's target is ≤ 24", perEvent)
			}
		})
	}
}

// --from starts the replay at a time into the recording: only events ending after it come back.
func TestReplayFrom(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.xfr")
	st := timeline.NewStore(nil)
	p, err := Prepare(Config{Scenario: "straggler", Steps: 10, Record: path}, st)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	from := 70 * time.Millisecond
	replayed := timeline.NewStore(nil)
	_, err = Replay(context.Background(), ReplayConfig{Path: path, From: from}, replayed)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, e := range st.Events() {
		if e.End >= from.Nanoseconds() {
			want++
		}
	}
	if replayed.Len() != want || want == 0 || want == st.Len() {
		t.Errorf("replay from %v: %d events; want the %d of %d that end after it", from, replayed.Len(), want, st.Len())
	}
}

// A report from a time into a recording counts the steps begun from then on, each without the
// communicator setup at the run's start (the pipeline sample's first step holds 0.94 s of it, in
// communicator inits that end before 941 ms), and its duration runs from that time.
func TestReplayFromReport(t *testing.T) {
	path := filepath.Join("..", "recordings", "samples", "pipeline.xfr")
	all := timeline.NewStore(nil)
	if _, err := Replay(context.Background(), ReplayConfig{Path: path}, all); err != nil {
		t.Fatal(err)
	}
	var end int64
	for _, e := range all.Events() {
		end = max(end, e.End)
	}
	for _, from := range []time.Duration{0, 500 * time.Millisecond, 941 * time.Millisecond, 1500 * time.Millisecond} {
		t.Run(from.String(), func(t *testing.T) {
			rp, err := Replay(context.Background(), ReplayConfig{Path: path, From: from})
			if err != nil {
				t.Fatal(err)
			}
			r := rp.Report()
			var steps int64
			for _, e := range all.Events() {
				if e.Kind == timeline.KindStep && e.Status == timeline.StatusOK && e.Start >= from.Nanoseconds() {
					steps++
				}
			}
			s := r.Steps
			if s.Count != steps || steps == 0 {
				t.Fatalf("%d steps; want the %d begun from %v", s.Count, steps, from)
			}
			// Every step of the sample takes 266–277 ms once its setup is left out.
			for name, v := range map[string]*int64{"mean": s.MeanNs, "p50": s.P50Ns, "p99": s.P99Ns, "last": s.LastNs} {
				if v == nil || *v < 250e6 || *v > 300e6 {
					t.Errorf("step %s = %v; want 250–300 ms (no setup in it)", name, v)
				}
			}
			if want := end - from.Nanoseconds(); r.DurationNs != want {
				t.Errorf("duration %d; want %d (the last end − %v)", r.DurationNs, want, from)
			}
		})
	}
}

// A recording of a killed run (cut mid-chunk) replays what it holds, with a warning.
func TestReplayTornRecording(t *testing.T) {
	path := filepath.Join(t.TempDir(), "torn.xfr")
	// 20 steps of overlap are ~29 000 events: several chunks of at most 8192.
	st := timeline.NewStore(nil)
	p, err := Prepare(Config{Scenario: "overlap", Steps: 20, Record: path}, st)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if err := os.WriteFile(path, data[:len(data)*2/3], 0o644); err != nil {
		t.Fatal(err)
	}
	replayed := timeline.NewStore(nil)
	rp, err := Replay(context.Background(), ReplayConfig{Path: path}, replayed)
	if err != nil {
		t.Fatal(err)
	}
	if replayed.Len() == 0 || replayed.Len() >= st.Len() || len(rp.Warnings) == 0 {
		t.Errorf("torn replay: %d of %d events, warnings %v", replayed.Len(), st.Len(), rp.Warnings)
	}
}

// sampleEpoch fixes the samples' wall-clock epoch so they regenerate byte for byte.
var sampleEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// recordings/samples holds small recordings of the built-ins. This test regenerates them and fails
// when the bytes differ: a format change must come with new samples (go test ./session -run
// Samples -update).
func TestSamplesUpToDate(t *testing.T) {
	dir := filepath.Join("..", "recordings", "samples")
	for _, name := range builtins {
		tmp := filepath.Join(t.TempDir(), name+".xfr")
		// Chunks cut by event count alone: a run slower than the flush period (-race, a busy
		// machine) would otherwise cut them elsewhere.
		p, err := Prepare(Config{Scenario: name, Steps: 4, Seed: 1, Record: tmp, Epoch: sampleEpoch, RecordFlushEvery: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		fresh, err := os.ReadFile(tmp)
		if err != nil {
			t.Fatal(err)
		}
		if len(fresh) >= 1<<20 {
			t.Errorf("%s sample is %d bytes; samples stay under 1 MiB", name, len(fresh))
		}
		path := filepath.Join(dir, name+".xfr")
		if *update {
			if err := os.WriteFile(path, fresh, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		shipped, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (regenerate with: go test ./session -run Samples -update)", err)
		}
		if !bytes.Equal(shipped, fresh) {
			t.Errorf("%s: the shipped sample differs from a fresh recording of the built-in: the format or the engine changed; regenerate with go test ./session -run Samples -update", path)
		}
		if _, err := recordings.ReadFile(path, recordings.Options{}); err != nil {
			t.Errorf("%s does not read: %v", path, err)
		}
	}
}

// A simulation run unpaced (headless, or recorded for later) records losslessly: a disk or a
// scheduler that holds the writer back must not change which events the recording keeps, or the
// same seed would record different runs. A paced run (the live console) keeps to the wall clock
// and drops, counted, rather than fall behind it.
func TestRecordingLosslessWhenUnpaced(t *testing.T) {
	for _, tc := range []struct {
		speed    float64
		lossless bool
	}{{0, true}, {1, false}, {100, false}} {
		path := filepath.Join(t.TempDir(), "run.xfr")
		p, err := Prepare(Config{Scenario: "pipeline", Steps: 1, Speed: tc.speed, Record: path}, timeline.NewStore(nil))
		if err != nil {
			t.Fatal(err)
		}
		if got := p.recorder.Lossless(); got != tc.lossless {
			t.Errorf("speed %v: recorder lossless = %v; want %v", tc.speed, got, tc.lossless)
		}
		if err := p.recorder.Close(nil); err != nil {
			t.Fatal(err)
		}
	}
}
