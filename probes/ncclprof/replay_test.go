//go:build cgo

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"
)

var xfertopBin struct {
	once sync.Once
	path string
	err  error
}

// xfertop builds the command once per test binary, to run it as a user does.
func xfertop(t *testing.T) string {
	t.Helper()
	tools(t)
	xfertopBin.once.Do(func() {
		xfertopBin.path = filepath.Join(build.dir, "xfertop")
		out, err := exec.Command("go", "build", "-o", xfertopBin.path, "../../cmd/xfertop").CombinedOutput()
		if err != nil {
			xfertopBin.err = fmt.Errorf("go build ./cmd/xfertop: %v\n%s", err, out)
		}
	})
	if xfertopBin.err != nil {
		t.Fatal(xfertopBin.err)
	}
	return xfertopBin.path
}

// One job, watched live and recorded per rank at once: `xfertop replay DIR --headless --json` of
// the recordings prints the report `xfertop attach --headless --json` printed, but for the source
// and the time origin (attach's time 0 is when the console started; the merge's, when the first
// rank did), which shifts every absolute time by one constant.
func TestHarnessReplayMergedEqualsAttach(t *testing.T) {
	bin := xfertop(t)
	sock := socketPath(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	attach := exec.CommandContext(ctx, bin, "attach", "--headless", "--json", "--socket", sock, "--linger", "500ms")
	var live, attachErr bytes.Buffer
	attach.Stdout, attach.Stderr = &live, &attachErr
	if err := attach.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the console's socket", func() bool { _, err := os.Stat(sock); return err == nil })
	runRanks(t, 3, []string{"XFERTOP_ATTACH=" + sock, "XFERTOP_RECORD_DIR=" + dir}, "-scenario", "allreduce", "-iters", "4")
	if err := attach.Wait(); err != nil {
		t.Fatalf("attach: %v\n%s", err, attachErr.String())
	}
	replay := exec.CommandContext(ctx, bin, "replay", dir, "--headless", "--json")
	var merged, replayErr bytes.Buffer
	replay.Stdout, replay.Stderr = &merged, &replayErr
	if err := replay.Run(); err != nil {
		t.Fatalf("replay %s: %v\n%s", dir, err, replayErr.String())
	}
	var a, b map[string]any
	if err := json.Unmarshal(live.Bytes(), &a); err != nil {
		t.Fatalf("attach's report: %v\n%s", err, live.String())
	}
	if err := json.Unmarshal(merged.Bytes(), &b); err != nil {
		t.Fatalf("replay's report: %v\n%s", err, merged.String())
	}
	if cs, _ := a["collectives"].([]any); len(cs) == 0 {
		t.Fatalf("attach reported no collectives:\n%s", live.String())
	}
	delete(a, "source")
	delete(b, "source")
	shift := map[float64]bool{}
	sameReport(t, "", a, b, shift)
	if len(shift) > 1 {
		t.Errorf("absolute times shifted by %d different amounts %v: the ranks' clocks were not aligned alike", len(shift), shift)
	}
}

// sameReport compares two reports decoded from JSON; start_ns fields may differ by a constant,
// collected in shift.
func sameReport(t *testing.T, path string, a, b any, shift map[float64]bool) {
	t.Helper()
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			t.Errorf("%s: attach %v; replay %v", path, a, b)
			return
		}
		for k, v := range x {
			if k == "start_ns" {
				av, _ := v.(float64)
				bv, _ := y[k].(float64)
				shift[av-bv] = true
				continue
			}
			sameReport(t, path+"."+k, v, y[k], shift)
		}
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			t.Errorf("%s: attach %v; replay %v", path, a, b)
			return
		}
		for i := range x {
			sameReport(t, fmt.Sprintf("%s[%d]", path, i), x[i], y[i], shift)
		}
	default:
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: attach %v; replay %v", path, a, b)
		}
	}
}
