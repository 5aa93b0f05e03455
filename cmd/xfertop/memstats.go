package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime/metrics"
	"time"
)

// memStatsEnv names a file to which xfertop appends a line of memory figures every second while
// it runs: opt-in, for soak tests (scripts/soak.sh) that watch the heap of a long console run from
// outside it. The figures come from runtime/metrics, which does not stop the world.
const memStatsEnv = "XFERTOP_MEMSTATS"

// memStatsHeader is the file's first line: tab-separated columns. live_heap is the heap marked
// live by the last GC (the figure that must stay flat); heap_objects the bytes in objects now, dead
// ones not yet swept included; go_total all memory the Go runtime has mapped.
const memStatsHeader = "unix_ms\tlive_heap\theap_objects\tgo_total\tgc_cycles\tgoroutines"

var memStatsNames = []string{"/gc/heap/live:bytes", "/memory/classes/heap/objects:bytes",
	"/memory/classes/total:bytes", "/gc/cycles/total:gc-cycles", "/sched/goroutines:goroutines"}

// startMemStats samples into path every interval until the returned stop is called; stop writes
// a last sample and closes the file. An empty path samples nothing.
func startMemStats(path string, every time.Duration) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", memStatsEnv, err)
	}
	w := bufio.NewWriter(f)
	samples := make([]metrics.Sample, len(memStatsNames))
	for i, n := range memStatsNames {
		samples[i].Name = n
	}
	write := func() {
		metrics.Read(samples)
		fmt.Fprintf(w, "%d", time.Now().UnixMilli())
		for _, s := range samples {
			v := uint64(0)
			if s.Value.Kind() == metrics.KindUint64 {
				v = s.Value.Uint64()
			}
			fmt.Fprintf(w, "\t%d", v)
		}
		fmt.Fprintln(w)
		_ = w.Flush() // a line at a time, so a reader sees each sample as it is taken
	}
	fmt.Fprintln(w, memStatsHeader)
	stopSampling := sampleEvery(every, write)
	return func() error {
		stopSampling()
		if err := w.Flush(); err != nil {
			f.Close()
			return fmt.Errorf("%s: %w", memStatsEnv, err)
		}
		return f.Close()
	}, nil
}
