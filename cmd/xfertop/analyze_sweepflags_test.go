package main

import (
	"strings"
	"testing"
)

// The flags of the sweep simulated beside an nccl-tests log are refused for any other input,
// naming the flag: ignored, a --topology that names no topology would pass for checked.
func TestAnalyzeRefusesNCCLTestsFlags(t *testing.T) {
	const rec = "../../recordings/samples/pipeline.xfr"
	for _, c := range []struct{ flag, value string }{
		{"--topology", "bogus"}, {"--scenario", "bogus"}, {"--set", "x=1"}, {"--seed", "7"}, {"--op", "bogus"},
	} {
		code, out, errs := runCLI(t, "analyze", rec, c.flag, c.value)
		if code != exitUsage || !strings.Contains(errs, c.flag+" applies to an nccl-tests log only") || out != "" {
			t.Errorf("analyze %s %s %s: exit %d, stderr %q, %d bytes out; want exit 2 naming the flag and no report", rec, c.flag, c.value, code, errs, len(out))
		}
	}
	if code, _, errs := runCLI(t, "analyze", rec); code != exitOK {
		t.Errorf("analyze %s: exit %d, %s", rec, code, errs)
	}
}
