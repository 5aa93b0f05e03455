package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// A console run whose --window was not given keeps a window sized to its GPUs: at 1,024 GPUs the
// user trial's whole run (1.7 M events), not 1 M events (0.3 s of it, trimming a finding's
// evidence a second after it was found); a small job keeps the old floor.
func TestLiveWindowSizedToTheJob(t *testing.T) {
	for _, c := range []struct {
		hosts   int
		devices int
	}{{0, 32}, {128, 1024}} {
		p, err := Prepare(Config{Scenario: "llm-train", Topology: "h100x8x4", Hosts: c.hosts, Steps: 1, Window: AutoWindow})
		if err != nil {
			t.Fatal(err)
		}
		want := timeline.AutoWindow(c.devices, systemMemory())
		if p.window == nil || p.window.Limit() != want {
			t.Fatalf("%d GPUs: window %v; want a window of %d events", c.devices, p.window, want)
		}
		if c.devices == 1024 && want < 1_706_512 {
			t.Errorf("1,024 GPUs: a window of %d events trims the trial's 1,706,512", want)
		}
	}
}

// A replay of a recording sizes its window from the recording's GPUs when it is not given.
func TestReplayWindowSizedToTheJob(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.xfr")
	p, err := Prepare(Config{Scenario: "llm-train", Topology: "h100x8x4", Hosts: 16, Steps: 1, Record: path})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	rs, err := StartReplay(t.Context(), ReplayConfig{Path: path}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Stop()
	if want := timeline.AutoWindow(128, systemMemory()); rs.limit != want {
		t.Errorf("replay of 128 GPUs: window of %d events; want %d", rs.limit, want)
	}
}

// MemTotal is read in bytes; a file without it, or with a malformed one, is unknown (0).
func TestMemTotal(t *testing.T) {
	for _, c := range []struct {
		text string
		want uint64
	}{
		{"MemTotal:       24684084 kB\nMemFree: 1 kB\n", 24684084 << 10},
		{"MemFree: 1 kB\n", 0},
		{"MemTotal: lots kB\n", 0},
	} {
		f, err := os.Create(filepath.Join(t.TempDir(), "meminfo"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(c.text); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Seek(0, 0); err != nil {
			t.Fatal(err)
		}
		if got := memTotal(f); got != c.want {
			t.Errorf("memTotal(%q) = %d; want %d", strings.TrimSpace(c.text), got, c.want)
		}
		f.Close()
	}
}
