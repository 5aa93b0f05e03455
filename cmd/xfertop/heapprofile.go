package main

import (
	"fmt"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// heapProfileEnv names a file to which xfertop writes a heap profile (for `go tool pprof
// -sample_index=inuse_space`) taken at the largest live heap the process reached: opt-in, for
// finding what holds the memory of a command as a user runs it (docs/performance.md). A profile
// taken at exit would show what is left after the work, not what the work held.
const heapProfileEnv = "XFERTOP_HEAPPROFILE"

// startHeapProfile watches the live heap every interval and, each time it is larger than it has
// been, writes a heap profile into path (replacing the last); stop takes a last look and closes.
// An empty path profiles nothing.
func startHeapProfile(path string, every time.Duration) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", heapProfileEnv, err)
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	peak, werr := uint64(0), error(nil)
	look := func() {
		metrics.Read(sample)
		live := uint64(0)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			live = sample[0].Value.Uint64()
		}
		if live <= peak && peak > 0 {
			return
		}
		peak = live
		// The profile is that of the last garbage collection: the one that measured this heap.
		if err := f.Truncate(0); err != nil {
			werr = err
			return
		}
		if _, err := f.Seek(0, 0); err != nil {
			werr = err
			return
		}
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			werr = err
		}
	}
	stopSampling := sampleEvery(every, look)
	return func() error {
		stopSampling()
		if werr != nil {
			f.Close()
			return fmt.Errorf("%s=%s: %w", heapProfileEnv, path, werr)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("%s: %w", heapProfileEnv, err)
		}
		return nil
	}, nil
}
