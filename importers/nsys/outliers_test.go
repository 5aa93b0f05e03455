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
