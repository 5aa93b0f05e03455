package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// An nccl-tests log given to a command other than analyze is named for what it is, not called
// malformed JSON.
func TestNCCLTestsLogOutsideAnalyze(t *testing.T) {
	const log = "../../report/nccltests/testdata/h100x8x2_all_reduce.log"
	const rec = "../../recordings/samples/pipeline.xfr"
	for _, args := range [][]string{
		{"replay", log},
		{"convert", log, filepath.Join(t.TempDir(), "out.json")},
		{"compare", log, rec},
		{"compare", rec, log},
		{"whatif", log, "--scale-kernel", "x=2"},
	} {
		code, _, errs := runCLI(t, args...)
		if code != exitData || !strings.Contains(errs, log+" is an nccl-tests log: only analyze reads it") || strings.Contains(errs, "JSON") {
			t.Errorf("%v: exit %d, %q; want exit 4 saying it is an nccl-tests log only analyze reads", args, code, errs)
		}
	}
}
