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
	for _, n := range []string{"hang.json", "healthy.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", n))
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
	d := diagnosis.New(0)
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
