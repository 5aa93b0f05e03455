package comms

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/analysis/diagnosis"
	"github.com/xfertop/xfertop/ui/theme"
	"github.com/xfertop/xfertop/ui/widget"
)

// TestCommFindings: the findings that name a communicator (a rank NCCL RAS found dead, a hang a
// Flight Recorder dump shows) are listed under the cache; a slow GPU is not a communicator's.
// Without the job's layout the culprit is a rank, not a host and GPU made up.
func TestCommFindings(t *testing.T) {
	res := &analysis.Result{Findings: []diagnosis.Finding{
		{Kind: diagnosis.DeadRank, Rank: 3, Host: -1, Comm: 2, Evidence: "RAS: communicator 0x22bb (4 ranks): rank 3 on node1 pid 201 GPU 1 is considered dead"},
		{Kind: diagnosis.Hang, Rank: 3, Host: -1, Comm: 1, Evidence: "all_reduce #5 on process group 0 (default_pg): rank 3 never entered it"},
		{Kind: diagnosis.SlowGPU, Rank: 1, Host: -1, Evidence: "kernels 20% slower"},
	}}
	v := New(&widget.Frame{Res: res, Styles: theme.DefaultStyles(true), Keys: widget.DefaultKeyMap()})
	v.SetSize(160, 20)
	out := v.View()
	// No source says which ranks share a host (RAS and Flight Recorder do not): the diagnosis
	// leaves their host unknown (-1), and the rank is named alone, as the report names it.
	for _, want := range []string{"Communicators in trouble (2 findings", "     2  dead rank     rank 3 — RAS: communicator 0x22bb",
		"     1  hang          rank 3 — all_reduce #5"} {
		if !strings.Contains(out, want) {
			t.Errorf("comms view lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "kernels 20% slower") {
		t.Errorf("comms view lists a slow GPU:\n%s", out)
	}
}

// TestNamedCommunicators: the communicators a source names without a cache (Flight Recorder's
// process groups, NCCL RAS's communicators) are listed like the cache's entries: id, the ranks
// known to be in it, unknown hits, creation and cost, then its name, size and the ranks in
// trouble, those with trouble first; the filter finds them by name or state.
func TestNamedCommunicators(t *testing.T) {
	res := &analysis.Result{Communicators: []analysis.Communicator{
		{ID: 1, Name: "process group 0 (default_pg)", Ranks: 4, Members: []int32{0, 1, 2, 3}},
		{ID: 4, Name: "process group 1 (tp)", Ranks: 2, Members: []int32{0}, Unheard: 1},
		{ID: 2, Name: "RAS communicator 0x7f8c", Ranks: 4, Members: []int32{1, 2, 3}, Dead: []int32{3}, Failing: []int32{2},
			Behind: []int32{1}, Missing: []int32{5, 6}, Incomplete: true},
		{ID: 3, Ranks: 0},
	}}
	v := New(&widget.Frame{Res: res, Styles: theme.DefaultStyles(true), Keys: widget.DefaultKeyMap()})
	v.SetSize(200, 20)
	out := ansi.Strip(v.View())
	for _, want := range []string{
		"Communicator cache — (the source does not record the cache) · 4 communicators named by the source",
		"     2  1-3                                —           —           —  RAS communicator 0x7f8c · 4 ranks · dead 3 · missing 5-6 · error 2 · behind 1 · incomplete",
		"     1  0-3                                —           —           —  process group 0 (default_pg) · 4 ranks\n",
		"     3  —                                  —           —           —  communicator 3 · — ranks\n",
		"     4  0                                  —           —           —  process group 1 (tp) · 2 ranks · 1 rank unheard from\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("comms view lacks %q:\n%s", want, out)
		}
	}
	if i, j := strings.Index(out, "RAS communicator"), strings.Index(out, "process group 0"); i < 0 || j < 0 || i > j {
		t.Errorf("the communicator in trouble is not listed first:\n%s", out)
	}
	v.Update(tea.KeyPressMsg{Code: '/', Text: "/"})
	for _, r := range "default_pg" {
		v.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	if out := ansi.Strip(v.View()); strings.Contains(out, "RAS communicator") || !strings.Contains(out, "process group 0") || !strings.Contains(out, "1 of 4 entries") {
		t.Errorf("filtered by default_pg:\n%s", out)
	}
}
