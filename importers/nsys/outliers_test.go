package nsys_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/importers/nsys"
	"github.com/xfertop/xfertop/importers/nsys/nsystest"
)

// TestOutliersSummarised: the events of a file that start more than 24 h from the capture's others
// are left out with one warning for the file, naming it, how many and the first; Verbose lists
// each, and an event without a name (a memset) is said to be unnamed, never "".
func TestOutliersSummarised(t *testing.T) {
	dir := t.TempDir()
	far := filepath.Join(dir, "far.sqlite")
	writeExport(t, far, oldSchema, append(nsystest.OldRows(),
		`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (365000000000000, 365000000001000, 1, 1, 14, 9, `+itoa(nsystest.GPID)+`, 3, 2, 1)`,
		`INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (365000000002000, 365000000003000, 1, 1, 14, 0, `+itoa(nsystest.GPID)+`, 0, 512)`)...)
	near := filepath.Join(dir, "near.sqlite")
	writeExport(t, near, oldSchema, nsystest.OldRows()...)
	cases := []struct {
		verbose bool
		want    []string // the warnings about far events, in order
	}{
		{false, []string{far + `: 2 events start more than 24 h from the capture's other events: left out (the first, kernel "gemm<float>(float*)" at 101h`}},
		{true, []string{far + `: kernel "gemm<float>(float*)" starts 101h`, far + `: memcpy (unnamed) starts 101h`}},
	}
	for _, c := range cases {
		im, err := nsys.ReadFiles([]string{far, near}, nsys.Options{Verbose: c.verbose})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, w := range im.Warnings {
			if strings.Contains(w, "24 h") {
				got = append(got, w)
			}
			if strings.Contains(w, `""`) {
				t.Errorf("verbose %v: a warning with an empty name: %q", c.verbose, w)
			}
		}
		if len(got) != len(c.want) {
			t.Fatalf("verbose %v: warnings %q; want %d about far events", c.verbose, im.Warnings, len(c.want))
		}
		for i, w := range c.want {
			if !strings.HasPrefix(got[i], w) {
				t.Errorf("verbose %v: warning %d is %q; want it to start %q", c.verbose, i, got[i], w)
			}
		}
	}
}

// TestCaptureOfAnotherDay: of exports captured more than 24 h apart, the one away from the others
// (the one the median start is not in: the smaller) is left out whole: the warning names it and
// the others and says how far apart they are, and the description counts only the devices whose
// events are kept, whichever order the files come in.
func TestCaptureOfAnotherDay(t *testing.T) {
	dir := t.TempDir()
	near := filepath.Join(dir, "near.sqlite")
	writeExport(t, near, oldSchema, append(nsystest.OldRows(), // a third GPU: the larger capture
		`INSERT INTO TARGET_INFO_GPU VALUES (7, 'NVIDIA H100 80GB HBM3', '0000:3b:00.0')`,
		`INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (7, 2, 4242, 'GPU-c')`,
		`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (5000002000, 5000012000, 2, 1, 7, 1, `+itoa(nsystest.GPID)+`, 3, 2, 1)`)...)
	far := filepath.Join(dir, "far.sqlite")
	rows := nsystest.OldRows()
	for i, r := range rows { // the same capture, two days later
		rows[i] = strings.Replace(r, "(1700000000000000000,", "(1700172800000000000,", 1)
	}
	writeExport(t, far, oldSchema, rows...)
	alone, err := nsys.ReadFiles([]string{near}, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, paths := range [][]string{{near, far}, {far, near}} {
		im, err := nsys.ReadFiles(paths, nsys.Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := far + ": its capture starts 48 h (2.0 days) after the other exports' (" + near + "): " + nsys.FarApart +
			", not one job's captures: its 14 events are left out"
		var said bool
		for _, w := range im.Warnings {
			said = said || strings.HasPrefix(w, want)
			if strings.Contains(w, "from the capture's other events") {
				t.Errorf("%v: the whole capture is also told event by event: %q", paths, w)
			}
		}
		if !said {
			t.Errorf("%v: warnings %q; want one starting %q", paths, im.Warnings, want)
		}
		if im.Devices != alone.Devices || len(im.Events) != len(alone.Events) {
			t.Errorf("%v: %d devices, %d events; want the near export's own: %d, %d", paths, im.Devices, len(im.Events), alone.Devices, len(alone.Events))
		}
	}
}
