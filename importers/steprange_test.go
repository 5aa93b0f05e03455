package importers

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/importers/nsys/nsystest"
)

// An Nsight export without the --step-range range asked for says which range it looked for.
func TestStreamNamesMissingStepRange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.sqlite")
	if err := nsystest.Write(path, nsystest.OldSchema, nsystest.OldRows()...); err != nil {
		t.Fatal(err)
	}
	var got Collect
	res, err := Stream([]string{path}, Options{StepRange: "nosuchrange"}, &got)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Steps, `no NVTX range named "nosuchrange", the --step-range`) {
		t.Errorf("how = %q; want the range named", res.Steps)
	}
}
