package ras

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis/diagnosis"
	"github.com/xfertop/xfertop/timeline"
)

// TestFindings reads ncclras documents and checks each finding: who, what, and its status.
func TestFindings(t *testing.T) {
	type finding struct {
		kind   timeline.Kind
		dev    int32
		status uint8
		text   string
	}
	cases := []struct {
		file string
		want []finding
	}{
		{"hang.json", []finding{
			{timeline.KindMark, -1, timeline.StatusOK, "RAS communicator 0x7f8c496ae9f661"},
			{timeline.KindAlert, 3, timeline.StatusError, "rank 3 on node1 pid 201 GPU 1 is considered dead"},
			{timeline.KindAlert, 2, timeline.StatusError, "rank 2 on node1 pid 200: asynchronous error 6"},
			{timeline.KindAlert, 1, timeline.StatusTimeout, "AllReduce counts disagree (MISMATCH): 2 ranks at 1407; behind: rank 1 (node0 pid 101) at 1406"},
			{timeline.KindMark, -1, timeline.StatusOK, "RAS communicator 0x11aa"},
			{timeline.KindMark, -1, timeline.StatusOK, "communicator 0x11aa (2 ranks): all 2 ranks answered"},
		}},
		{"healthy.json", []finding{
			{timeline.KindMark, -1, timeline.StatusOK, "RAS communicator"},
			{timeline.KindMark, -1, timeline.StatusOK, "all 2 ranks answered, no errors, collective counts agree"},
		}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			im, err := ReadFiles([]string{filepath.Join("testdata", c.file)})
			if err == nil && c.file == "hang.json" && len(im.Events) > 3 {
				// The mismatch says which collective and how far behind its rank is (1406 against
				// 1407): the diagnosis weighs it against what Flight Recorder shows of the rank.
				if op, n := im.Events[3].CountBehind(); op != timeline.CollAllReduce || n != 1 {
					t.Errorf("count mismatch: %v, %d behind; want all_reduce, 1", op, n)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(im.Events) != len(c.want) {
				t.Fatalf("%d findings; want %d", len(im.Events), len(c.want))
			}
			for i, w := range c.want {
				e := im.Events[i]
				msg := im.Strings.Lookup(e.Label)
				if e.Kind != w.kind || e.Device != w.dev || e.Status != w.status || !strings.Contains(msg, w.text) {
					t.Errorf("finding %d = %v dev %d status %d %q; want %v dev %d status %d containing %q", i, e.Kind, e.Device, e.Status, msg, w.kind, w.dev, w.status, w.text)
				}
			}
		})
	}
}

// TestIncomplete: ranks that never joined a communicator are a finding.
func TestIncomplete(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.json")
	doc := `{"nccl_version":"2.29.2","timestamp":"2026-11-27 08:30:00","communicators":[{"hash":"0x1","size":4,"ranks":[{"rank":0,"host":"h","pid":1,"collective_counts":{"AllReduce":1}}],"missing_ranks":[]}]}`
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	im, err := ReadFiles([]string{p})
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Events) != 2 || !strings.Contains(im.Strings.Lookup(im.Events[1].Label), "only 1 of its ranks are known to RAS") {
		t.Fatalf("findings %v; want one saying 3 ranks never joined", im.Events)
	}
}

// TestBadInput: broken documents are errors naming the file and what is wrong.
func TestBadInput(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`{"nccl_version":"2.28.7","communicators":[{"hash":"0x1","size":2,"ranks":[{"rank":5}]}]}`, "rank 5 outside its size 2"},
		{`{"nccl_version":"2.28.7","communicators":[{"hash":"0x1","size":0}]}`, "size 0 out of range"},
		{`{"nccl_version": 2.28`, "r.json (byte"},
	} {
		p := filepath.Join(t.TempDir(), "r.json")
		if err := os.WriteFile(p, []byte(c.doc), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadFiles([]string{p}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadFiles(%s) = %v; want an error containing %q", c.doc, err, c.want)
		}
	}
}

// FuzzRead: any document gives findings or an error, never a panic.
func FuzzRead(f *testing.F) {
	for _, p := range []string{filepath.Join("testdata", "hang.json"), filepath.Join("testdata", "healthy.json"), realStatus} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "f.json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, _ = ReadFiles([]string{p})
	})
}

// TestDiagnosisFindings: what RAS states becomes the diagnosis's findings, each of its kind and
// naming its rank and communicator; a healthy communicator none.
func TestDiagnosisFindings(t *testing.T) {
	im, err := ReadFiles([]string{filepath.Join("testdata", "hang.json"), filepath.Join("testdata", "healthy.json")})
	if err != nil {
		t.Fatal(err)
	}
	d := diagnosis.New(nil)
	for i := range im.Events {
		d.Add(&im.Events[i])
	}
	var got []string
	for _, f := range d.Result(im.Strings) {
		got = append(got, fmt.Sprintf("%s rank %d comm %d", f.Kind, f.Rank, f.Comm))
	}
	sort.Strings(got)
	want := []string{"dead rank rank 3 comm 1", "hang rank 1 comm 1", "rank error rank 2 comm 1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("findings %q; want %q", got, want)
	}
}

// TestDuplicateRank: a rank listed twice while another of the communicator is absent is warned
// about, the second listing left out, and the absent rank is a missing rank (not heard from) that
// the diagnosis names, not a communicator found healthy.
func TestDuplicateRank(t *testing.T) {
	cases := []struct {
		name, ranks, missing string
		absent               []int32 // ranks told as missing
		incomplete           bool
	}{
		{"twice in ranks", `{"rank":0,"host":"h0","pid":1},{"rank":0,"host":"h0","pid":1}`, ``, []int32{1}, false},
		{"in ranks and missing", `{"rank":0,"host":"h0","pid":1}`, `{"rank":0,"host":"h0","pid":1}`, []int32{1}, false},
		{"twice, two absent", `{"rank":1,"host":"h0","pid":1},{"rank":1,"host":"h0","pid":1}`, ``, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			size := 2
			if c.incomplete {
				size = 3
			}
			doc := fmt.Sprintf(`{"nccl_version":"2.29.2","timestamp":"2026-11-27 08:30:00","communicators":[{"hash":"0x1","size":%d,"ranks":[%s],"missing_ranks":[%s]}]}`, size, c.ranks, c.missing)
			p := filepath.Join(t.TempDir(), "dup.json")
			if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			im, err := ReadFiles([]string{p})
			if err != nil {
				t.Fatal(err)
			}
			if len(im.Warnings) != 1 || !strings.Contains(im.Warnings[0], p+": communicator 0x1: ") || !strings.Contains(im.Warnings[0], "lists rank") ||
				!strings.Contains(im.Warnings[0], "again: left out") {
				t.Errorf("warnings %q; want one naming the file, communicator and the rank listed again", im.Warnings)
			}
			var missing []int32
			incomplete, healthy := false, false
			for _, e := range im.Events {
				msg := im.Strings.Lookup(e.Label)
				switch {
				case e.Kind == timeline.KindAlert && e.Sub == timeline.AlertRankMissing:
					missing = append(missing, e.Device)
					if !strings.Contains(msg, "not heard from") {
						t.Errorf("missing rank's finding %q; want it to say it was not heard from", msg)
					}
				case e.Kind == timeline.KindAlert && e.Sub == timeline.AlertCommIncomplete:
					incomplete = true
				case strings.Contains(msg, "all ") && strings.Contains(msg, "ranks answered"):
					healthy = true
				}
			}
			if !reflect.DeepEqual(missing, c.absent) || incomplete != c.incomplete || healthy {
				t.Errorf("missing %v, incomplete %v, healthy %v; want missing %v, incomplete %v, not healthy", missing, incomplete, healthy, c.absent, c.incomplete)
			}
		})
	}
}

// TestRanksAreDevices: a communicator's ranks are the job's devices, counted though no finding
// names them (a healthy job's report says 2 devices, not 0).
func TestRanksAreDevices(t *testing.T) {
	im, err := ReadFiles([]string{filepath.Join("testdata", "healthy.json")})
	if err != nil {
		t.Fatal(err)
	}
	if im.Devices != 2 {
		t.Errorf("%d devices; want 2 (the communicator's ranks)", im.Devices)
	}
}

// TestUnknownProcessNotMatched: ranks whose process RAS could not name (host "unknown", pid -1,
// as NCCL writes them) are not one process: a narrower communicator's rank of an unknown process
// keeps its own rank, rather than taking whichever world rank was listed last with pid -1.
func TestUnknownProcessNotMatched(t *testing.T) {
	doc := `{"nccl_version": "2.28.9", "communicators": [
 {"hash": "0xa", "size": 4, "ranks": [
   {"rank": 0, "host": "unknown", "pid": -1, "collective_counts": {"AllReduce": 5}},
   {"rank": 1, "host": "n0", "pid": 11, "collective_counts": {"AllReduce": 5}},
   {"rank": 2, "host": "n0", "pid": 12, "collective_counts": {"AllReduce": 5}},
   {"rank": 3, "host": "unknown", "pid": -1, "collective_counts": {"AllReduce": 5}}], "missing_ranks": []},
 {"hash": "0xb", "size": 2, "ranks": [
   {"rank": 0, "host": "n0", "pid": 11, "collective_counts": {"AllReduce": 5}},
   {"rank": 1, "host": "unknown", "pid": -1, "status": {"async_error": 2}, "collective_counts": {"AllReduce": 5}}], "missing_ranks": []}]}`
	path := filepath.Join(t.TempDir(), "ras.json")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	im, err := ReadFiles([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range im.Events {
		if e.Kind == timeline.KindAlert {
			if e.Device != 1 {
				t.Errorf("the unknown process's error on device %d; want 1 (its rank in 0xb, not the world's rank 3)", e.Device)
			}
			return
		}
	}
	t.Error("no alert for the asynchronous error")
}
