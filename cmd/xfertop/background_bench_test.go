package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xfertop/xfertop/importers"
	"github.com/xfertop/xfertop/importers/nsys/nsystest"
	"github.com/xfertop/xfertop/session"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui"
)

// BenchmarkImportConsole measures what `xfertop replay EXPORT` on a terminal costs: how soon the
// console shows (open-s: its first frame, with the import's progress bar), how soon it draws the
// first events (first-events-s: an export is surveyed whole before its first event), how long the
// whole import takes while the console replays it at 1× and refreshes every 60 ms (import-s), and
// the peak resident set meanwhile (peak-RSS-MiB, VmHWM reset before; Linux). Exports of
// nsystest.WriteLarge, 200,000 kernels or the numbers listed in XFERTOP_NSYS_LARGE (13000000
// writes about 1 GB):
//
//	XFERTOP_NSYS_LARGE=13000000 go test -run XXX -bench ImportConsole -benchtime 1x ./cmd/xfertop/
func BenchmarkImportConsole(b *testing.B) {
	sizes := []int{200_000}
	if env := os.Getenv("XFERTOP_NSYS_LARGE"); env != "" {
		sizes = sizes[:0]
		for f := range strings.SplitSeq(env, ",") {
			n, err := strconv.Atoi(f)
			if err != nil || n <= 0 {
				b.Fatalf("XFERTOP_NSYS_LARGE: %q is not a number of kernels", f)
			}
			sizes = append(sizes, n)
		}
	}
	dir := b.TempDir()
	for _, n := range sizes {
		b.Run(fmt.Sprintf("kernels=%d", n), func(b *testing.B) {
			path := filepath.Join(dir, fmt.Sprintf("k%d.sqlite", n))
			if err := nsystest.WriteLarge(path, n, 64); err != nil {
				b.Fatal(err)
			}
			defer os.Remove(path)
			st, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			var open, first, all time.Duration
			var rss uint64
			for b.Loop() {
				debug.FreeOSMemory() // the export's writer's memory is not the console's
				resetRSS := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
				open, first, all = consoleTimes(b, path)
				if resetRSS {
					rss = max(rss, vmHWM())
				}
			}
			b.ReportMetric(open.Seconds(), "open-s")
			b.ReportMetric(first.Seconds(), "first-events-s")
			b.ReportMetric(all.Seconds(), "import-s")
			b.ReportMetric(float64(st.Size())/(1<<20), "file-MiB")
			if rss > 0 {
				b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MiB")
			}
		})
	}
}

// consoleTimes opens the console on an import of path as replay does, refreshing it every 60 ms
// until the import has ended, and returns when its first frame was drawn, when it first drew
// events, and when the import ended, from the start.
func consoleTimes(b *testing.B, path string) (open, first, all time.Duration) {
	start := time.Now()
	err := openImport(context.Background(), []string{path}, importers.Options{}, session.ReplayConfig{Speed: 1}, timeline.DefaultWindow,
		importHooks{}, io.Discard, func(s ui.Source) error {
			src := s.(replaySource)
			m := console(src)
			m.View()
			open = time.Since(start)
			for {
				time.Sleep(ui.DefaultTick)
				refreshed(m)
				if first == 0 && src.Snapshot().Total > 0 {
					first = time.Since(start)
				}
				if st := src.Status().Import; st.Finished {
					if st.Err != nil {
						return st.Err
					}
					all = time.Since(start)
					return nil
				}
			}
		})
	if err != nil {
		b.Fatal(err)
	}
	return open, first, all
}

// vmHWM is the process's peak resident set in bytes since it was last reset, or 0.
func vmHWM() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
