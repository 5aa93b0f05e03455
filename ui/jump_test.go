package ui

import (
	"fmt"
	"github.com/xfertop/xfertop/analysis/hostmap"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis/diagnosis"
	"github.com/xfertop/xfertop/ui/views/findings"
	"github.com/xfertop/xfertop/ui/views/timeline"
	"github.com/xfertop/xfertop/ui/widget"
)

// A jump to a finding's culprit device, far down a cluster's timeline, scrolls so that the
// device's heading and its streams are on screen, the device near the top: not its heading on the
// last row with its streams below the fold.
func TestJumpShowsTheDevicesStreams(t *testing.T) {
	m := sized(clusterSource(t, 1024), 80, 24)
	m.Update(widget.JumpToMsg{Device: 613, Stream: 0, Time: 10_000_000, Dur: 1_000_000})
	lines := strings.Split(text(m), "\n")
	at := -1
	for i, l := range lines {
		if strings.Contains(l, "device 613") {
			at = i
			break
		}
	}
	if at < 0 || at > 12 || at+1 >= len(lines) || !strings.Contains(lines[at+1], "s1") {
		t.Fatalf("device 613's heading at line %d (want in the top half, its stream under it):\n%s", at, strings.Join(lines, "\n"))
	}
	if first := strings.TrimSpace(lines[3]); !strings.HasPrefix(first, "▾") && !strings.HasPrefix(first, "▸") {
		t.Fatalf("the first row is %q, not a host's or device's heading:\n%s", first, strings.Join(lines, "\n"))
	}
}

// :rank puts the rank's device heading near the top with its streams under it, and the first
// row drawn is a heading (a host's or a device's), not a stream that does not say whose it is.
func TestRankShowsAHeadingFirst(t *testing.T) {
	m := sized(scenarioSource(t, "llm-train", 1, "h100x8x2"), 80, 24)
	typeCmd(m, "rank 13")
	lines := strings.Split(text(m), "\n")
	if first := strings.TrimSpace(lines[3]); !strings.HasPrefix(first, "▾") && !strings.HasPrefix(first, "▸") {
		t.Fatalf("after :rank 13 the first row is %q, not a heading:\n%s", first, strings.Join(lines, "\n"))
	}
	if !strings.Contains(text(m), "▾ device 13") {
		t.Fatalf("after :rank 13 device 13's heading is not on screen:\n%s", strings.Join(lines, "\n"))
	}
}

// Enter on a rolled-up host far down the overview's table expands it with its GPUs in sight: the
// host's row near the top, not its GPUs below the fold.
func TestOverviewExpandShowsTheGPUs(t *testing.T) {
	m := sized(clusterSource(t, 1024), 80, 24)
	text(m) // drawn once: the table knows it scrolls
	press(m, "G")
	text(m)
	press(m, "enter")
	lines := strings.Split(text(m), "\n")
	at := -1
	for i, l := range lines {
		if strings.Contains(l, "▾h127") {
			at = i
		}
	}
	if at < 0 || at+8 >= len(lines) || !strings.Contains(lines[at+8], "1023") {
		t.Fatalf("host 127's row at line %d (want its 8 GPUs under it on screen):\n%s", at, strings.Join(lines, "\n"))
	}
}

// PgDn and PgUp page the overview's table and the timeline's rows, as in every list.
func TestPageKeys(t *testing.T) {
	m := sized(clusterSource(t, 1024), 80, 24)
	text(m) // drawn once: the table knows it scrolls
	press(m, "pgdown")
	if got := text(m); !strings.Contains(got, "rows 15–29 of 128") {
		t.Errorf("PgDn in the overview:\n%s", got)
	}
	press(m, "pgup")
	if got := text(m); !strings.Contains(got, "rows 1–15 of 128") {
		t.Errorf("PgUp in the overview:\n%s", got)
	}
	press(m, "2")
	text(m)
	before := paneAt[*timeline.Model](m, TabTimeline).Selected()
	press(m, "pgdown")
	text(m)
	if after := paneAt[*timeline.Model](m, TabTimeline).Selected(); after-before < 5 {
		t.Errorf("PgDn in the timeline moved the selection from row %d to %d; want a page", before, after)
	}
	press(m, "?")
	if got := text(m); !strings.Contains(got, "first row") || !strings.Contains(got, "page down") {
		t.Errorf("the timeline's help lists no g/G or PgDn:\n%s", got)
	}
}

// A host's GPU table does not repeat the metric it is coloured by as another column.
func TestHostTableNoDuplicateColumn(t *testing.T) {
	m := sized(clusterSource(t, 256), 160, 45)
	for _, c := range []struct{ link, col string }{{"", "busy %"}, {"nic", "NIC %"}} {
		if c.link != "" {
			typeCmd(m, "link "+c.link)
		}
		typeCmd(m, "host 3")
		var head string
		for _, l := range strings.Split(text(m), "\n") {
			if strings.HasPrefix(l, "gpu   local") {
				head = l
			}
		}
		if head == "" || strings.Count(head, c.col) != 1 {
			t.Errorf("coloured by %q: the host's table head %q has %q other than once", c.col, head, c.col)
		}
	}
}

// Enter on a finding puts its culprit's own device heading on the first row of the timeline,
// selected, at a small and a large terminal: not the heading of a GPU a few above it (the user
// read "device 297" at the top for a culprit on 299). Rank 1023 cannot be first (the list ends);
// it is still selected and on screen.
func TestFindingJumpPutsTheCulpritFirst(t *testing.T) {
	src := clusterSource(t, 1024)
	for _, sz := range [][2]int{{80, 24}, {200, 50}} {
		for _, f := range []diagnosis.Finding{
			{Kind: diagnosis.SlowLink, Rank: 299, Host: 37, Onset: 900_000_000, At: 1_150_000_000},
			{Kind: diagnosis.Hang, Rank: 402, Host: 50, Onset: 920_000_000, At: 1_920_000_000},
			{Kind: diagnosis.Hang, Rank: 1023, Host: 127, Onset: 920_000_000, At: 1_920_000_000},
		} {
			m := sized(src, sz[0], sz[1])
			j, ok := findings.Jump(&f, hostmap.ByID(8))
			if !ok {
				t.Fatalf("Jump(%+v) found no device", f)
			}
			m.Update(j)
			lines := strings.Split(text(m), "\n")
			want := fmt.Sprintf("▾ device %d", f.Rank)
			first := ""
			for i, l := range lines[:len(lines)-1] {
				if strings.Contains(l, "/col") { // the ruler: the rows start under it
					first = strings.TrimSpace(lines[i+1])
					break
				}
			}
			if f.Rank != 1023 && first != want {
				t.Errorf("%dx%d: after the jump to rank %d the first row is %q; want %q:\n%s", sz[0], sz[1], f.Rank, first, want, strings.Join(lines, "\n"))
			}
			if !strings.Contains(text(m), want) {
				t.Errorf("%dx%d: rank %d's heading is not on screen:\n%s", sz[0], sz[1], f.Rank, strings.Join(lines, "\n"))
			}
			tl := paneAt[*timeline.Model](m, TabTimeline)
			if r := tl.Rows()[tl.Selected()]; !r.Header || r.Device != f.Rank {
				t.Errorf("%dx%d: after the jump to rank %d the selected row is %+v; want its heading", sz[0], sz[1], f.Rank, r)
			}
		}
	}
}

// Enter on a hang whose culprit launched nothing (no stream in the timeline) shows its host's
// GPUs, the host's heading first, and the footer says why the culprit is not among them: not the
// first host's rows, as if the jump had gone nowhere.
func TestFindingJumpToASilentRank(t *testing.T) {
	m := sized(clusterSourceWithout(t, 1024, 402), 200, 50)
	f := diagnosis.Finding{Kind: diagnosis.Hang, Rank: 402, Host: 50, Onset: 920_000_000, At: 1_920_000_000}
	j, _ := findings.Jump(&f, hostmap.ByID(8))
	m.Update(j)
	got := text(m)
	lines := strings.Split(got, "\n")
	first := ""
	for i, l := range lines[:len(lines)-1] {
		if strings.Contains(l, "/col") {
			first = strings.TrimSpace(lines[i+1])
			break
		}
	}
	if !strings.HasPrefix(first, "▾ host 50 ") {
		t.Errorf("after the jump to silent rank 402 the first row is %q; want host 50's heading, open:\n%s", first, got)
	}
	if !strings.Contains(got, "rank 402 has no stream in the events held (it launched nothing in them)") {
		t.Errorf("the console does not say why rank 402 is not shown:\n%s", got)
	}
	// The footer serves every finding's kind (a slow link's culprit can have no stream either):
	// it does not guess at a hang.
	if strings.Contains(got, "hung rank may") {
		t.Errorf("the footer guesses the culprit hung:\n%s", got)
	}
}
