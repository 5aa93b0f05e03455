package comms

import (
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/analysis/diagnosis"
	"github.com/xfertop/xfertop/ui/theme"
	"github.com/xfertop/xfertop/ui/widget"
)

// TestCommFindings: the findings that name a communicator (a rank NCCL RAS found dead, a hang a
// Flight Recorder dump shows) are listed under the cache; a slow GPU is not a communicator's.
func TestCommFindings(t *testing.T) {
	res := &analysis.Result{Findings: []diagnosis.Finding{
		{Kind: diagnosis.DeadRank, Rank: 3, Host: 0, Comm: 2, Evidence: "RAS: communicator 0x22bb (4 ranks): rank 3 on node1 pid 201 GPU 1 is considered dead"},
		{Kind: diagnosis.Hang, Rank: 3, Host: 0, Comm: 1, Evidence: "all_reduce #5 on process group 0 (default_pg): rank 3 never entered it"},
		{Kind: diagnosis.SlowGPU, Rank: 1, Host: 0, Evidence: "kernels 20% slower"},
	}}
	v := New(&widget.Frame{Res: res, Styles: theme.DefaultStyles(true), Keys: widget.DefaultKeyMap()})
	v.SetSize(160, 20)
	out := v.View()
	for _, want := range []string{"Communicators in trouble (2 findings", "     2  dead rank     rank 3 (host 0 GPU 3) — RAS: communicator 0x22bb",
		"     1  hang          rank 3 (host 0 GPU 3) — all_reduce #5"} {
		if !strings.Contains(out, want) {
			t.Errorf("comms view lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "kernels 20% slower") {
		t.Errorf("comms view lists a slow GPU:\n%s", out)
	}
}
