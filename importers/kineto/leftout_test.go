package kineto

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeRank writes a small PyTorch profiler trace of one rank: n kernels on stream 7.
func writeRank(t *testing.T, dir string, rank, n int) string {
	t.Helper()
	var evs []string
	for i := range n {
		evs = append(evs, fmt.Sprintf(`{"ph":"X","cat":"kernel","name":"gemm_%d","pid":0,"tid":7,"ts":%d,"dur":5,"args":{"device":0,"stream":7,"correlation":%d}}`,
			i, 1_700_000_000_000_000+int64(i)*10, i+1))
	}
	p := filepath.Join(dir, fmt.Sprintf("rank-%d.json", rank))
	body := fmt.Sprintf(`{"distributedInfo":{"rank":%d,"world_size":3},"traceEvents":[%s]}`, rank, strings.Join(evs, ",\n"))
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOneCutTraceAmongRanks: one rank's trace cut short among several is left out with a warning
// naming the file and where; the other ranks are imported. A single file cut short, or every
// file, is still refused.
func TestOneCutTraceAmongRanks(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for r := range 3 {
		paths = append(paths, writeRank(t, dir, r, 50))
	}
	cut := func(p string) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b[:len(b)/2], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cut(paths[1])
	im, err := ReadFiles(paths, Options{})
	if err != nil {
		t.Fatalf("ReadFiles with rank 1's trace cut: %v; want ranks 0 and 2 imported", err)
	}
	if !slices.ContainsFunc(im.Warnings, func(w string) bool {
		return strings.Contains(w, "rank-1.json") && strings.Contains(w, "left out") && strings.Contains(w, "byte")
	}) {
		t.Errorf("warnings %q; want one naming rank-1.json, where it is cut, and that it is left out", im.Warnings)
	}
	devs := map[int32]int{}
	for _, e := range im.Events {
		devs[e.Device]++
	}
	if devs[1] != 0 || devs[0] != 50 || devs[2] != 50 || im.Devices != 2 {
		t.Errorf("events by device %v, %d devices; want 50 of ranks 0 and 2, none of rank 1", devs, im.Devices)
	}

	if _, err := ReadFiles(paths[1:2], Options{}); err == nil {
		t.Error("a single trace cut short imported; want its error")
	}
	cut(paths[0])
	cut(paths[2])
	if _, err := ReadFiles(paths, Options{}); err == nil || !strings.Contains(err.Error(), "rank-0.json: the JSON ends before it is complete, at byte offset") {
		t.Errorf("every trace cut: %v; want the first one's error", err)
	}
}
