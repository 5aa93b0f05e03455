package ui

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// Every view at two sizes, colours pinned (dark theme, true colour), compared with testdata. Run
// go test ./ui -update after an intended change, and read the diff.
func TestGoldenViews(t *testing.T) {
	src := scenarioSource(t, "pipeline", 3, "")
	bar := scenarioSource(t, "straggler", 2, "")
	sizes := [][2]int{{80, 24}, {160, 40}}
	for tab := range len(tabNames) {
		for _, sz := range sizes {
			name := fmt.Sprintf("%d-%s-%dx%d", tab+1, strings.ToLower(tabNames[tab]), sz[0], sz[1])
			t.Run(name, func(t *testing.T) {
				s := src
				if tab == TabBarriers {
					s = bar
				}
				m := sized(s, sz[0], sz[1])
				press(m, fmt.Sprint(tab+1))
				checkGolden(t, name, m.View().Content, sz[0], sz[1])
			})
		}
	}
}

// checkGolden asserts a frame fills the terminal and equals testdata/name.golden (rewritten with
// -update).
func checkGolden(t *testing.T, name, got string, w, h int) {
	t.Helper()
	checkFrame(t, got, w, h)
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./ui -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s; as text it is now:\n%s", name, path, ansi.Strip(got))
	}
}

// checkFrame asserts a frame is exactly the terminal's size: nothing wraps or scrolls.
func checkFrame(t *testing.T, frame string, w, h int) {
	t.Helper()
	lines := strings.Split(frame, "\n")
	if len(lines) != h {
		t.Errorf("frame has %d lines; the terminal has %d", len(lines), h)
	}
	for i, l := range lines {
		if lw := ansi.StringWidth(l); lw > w {
			t.Errorf("line %d is %d cells wide; the terminal has %d: %q", i, lw, w, ansi.Strip(l))
		}
	}
}

// The transfers view of a run of collectives at a narrow and a wide terminal: at 80 columns the
// least important columns give way whole, and busbw and GB/s stay readable.
func TestGoldenTransfersCollectives(t *testing.T) {
	src := scenarioSource(t, "allreduce-sweep", 1, "")
	for _, sz := range [][2]int{{80, 24}, {160, 40}} {
		name := fmt.Sprintf("3-transfers-collectives-%dx%d", sz[0], sz[1])
		t.Run(name, func(t *testing.T) {
			m := sized(src, sz[0], sz[1])
			press(m, "3")
			checkGolden(t, name, m.View().Content, sz[0], sz[1])
		})
	}
}
