package ras

import (
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis/diagnosis"
	"github.com/xfertop/xfertop/timeline"
)

// realStatus is NCCL RAS's VERBOSE STATUS of a real, healthy two-rank job (NCCL 2.28.9, two ranks
// sharing one H200 as two NCCL hosts), as the client protocol gave it in JSON
// (importers/testdata/realjob/…/README.md).
var realStatus = filepath.Join("..", "testdata", "realjob", "h200-torch2.11-nccl2.28.9", "watch", "ras-status.json")

// TestRealJobStatus reads the real document: one communicator of 2 ranks, both answering, the
// healthy mark and no alert; the ranks' hosts as RAS names them; no finding from the diagnosis.
func TestRealJobStatus(t *testing.T) {
	im, err := ReadFiles([]string{realStatus})
	if err != nil {
		t.Fatal(err)
	}
	if im.Devices != 2 || im.World != 2 {
		t.Errorf("devices %d world %d; want 2 and 2", im.Devices, im.World)
	}
	if want := map[int32]string{0: "127.0.0.1", 1: "127.0.0.1"}; !maps.Equal(im.RankHosts, want) {
		t.Errorf("rank hosts %v; want %v", im.RankHosts, want)
	}
	var marks []string
	for _, e := range im.Events {
		msg := im.Strings.Lookup(e.Label)
		if e.Kind != timeline.KindMark || e.Status != timeline.StatusOK {
			t.Errorf("%v status %d %q in a healthy job; want only marks", e.Kind, e.Status, msg)
		}
		marks = append(marks, msg)
	}
	if len(marks) != 2 || !strings.Contains(marks[0], "RAS communicator 0x468337b1724d082f") ||
		!strings.Contains(marks[1], "all 2 ranks answered, no errors, collective counts agree") {
		t.Errorf("marks %q; want the communicator and its healthy mark", marks)
	}
	d := diagnosis.New(nil)
	for i := range im.Events {
		d.Add(&im.Events[i])
	}
	if f := d.Result(im.Strings); len(f) != 0 {
		t.Errorf("%d findings in a healthy job; first: %+v", len(f), f[0])
	}
}
