package ui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/timeline"
)

// The overview's communicator cache is unknown for a source that records none (a trace), and
// "no lookups" only for one that would record them (the report says the same).
func TestOverviewCommCacheUnknown(t *testing.T) {
	for _, tc := range []struct {
		backend, want string
	}{
		{"kineto", "comm cache: — (the source does not record communicators)"},
		{"sim", "comm cache: no lookups"},
	} {
		w := timeline.NewWindow(0, nil)
		kernels(w, 1, 5, 0)
		src := &fakeSource{win: w, info: SourceInfo{Name: "x", Replay: true, Meta: timeline.Meta{Backend: tc.backend, Devices: 1}}, status: Status{Done: true}}
		if got := text(sized(src, 120, 30)); !strings.Contains(got, tc.want) {
			t.Errorf("%s: the overview lacks %q:\n%s", tc.backend, tc.want, got)
		}
	}
}

// A source still going says "yet" of what it has not seen; one that ended says there is none; a
// replay sought to a time says none since then (what came before was not analysed, not absent).
// Once the source ended nothing moves: the links' rates now are 0, whatever the last bucket held.
func TestOverviewAfterTheEnd(t *testing.T) {
	for _, tc := range []struct {
		name        string
		done        bool
		from        int64
		want        []string
		rateShownAt bool // the copy's 1 GB/s on PCIe still shown as now
	}{
		{"live", false, 0, []string{"no steps yet", "comm cache: no lookups yet", "each link now, % of peak"}, true},
		{"ended", true, 0, []string{"no steps   ", "comm cache: no lookups\n", "each link now (ended: idle), % of peak"}, false},
		{"sought to the end", true, int64(3 * analysis.BucketNs), []string{"no steps since " + "", "comm cache: no lookups since "}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := timeline.NewWindow(0, nil)
			// 1 GB/s over PCIe for four buckets: the newest complete bucket holds it.
			end := int64(4 * analysis.BucketNs)
			w.Emit(&timeline.Event{Kind: timeline.KindMemcpy, Sub: uint8(timeline.CopyH2D), Device: 0, Peer: timeline.NoDevice,
				Start: 0, End: end, Bytes: end})
			w.SetFrom(tc.from)
			src := &fakeSource{win: w, info: SourceInfo{Name: "x", Replay: true, Meta: timeline.Meta{Backend: "sim", Devices: 1}}, status: Status{Done: tc.done}}
			got := text(sized(src, 160, 30))
			for _, want := range tc.want {
				if !strings.Contains(got, want) {
					t.Errorf("the overview lacks %q:\n%s", want, got)
				}
			}
			if strings.Contains(got, "yet") != !tc.done {
				t.Errorf("says \"yet\": %v; the source has ended: %v\n%s", strings.Contains(got, "yet"), tc.done, got)
			}
			row := strings.Split(got, "\n")[5]
			if shown := strings.Contains(row, "1.0 "); shown != tc.rateShownAt {
				t.Errorf("device row %q shows 1.0 GB/s now: %v; want %v", row, shown, tc.rateShownAt)
			}
		})
	}
}

// The overview and the idle view name the time that is neither compute nor idle alike (HTA's
// non-compute), with the same value for a device.
func TestNonComputeOneWord(t *testing.T) {
	src := scenarioSource(t, "pipeline", 2, "")
	m := sized(src, 160, 40)
	over := text(m)
	press(m, "5")
	idle := text(m)
	for name, v := range map[string]string{"overview": over, "idle": idle} {
		if strings.Contains(v, "xfer%") || !strings.Contains(v, "non-comp") {
			t.Errorf("the %s view does not say non-compute:\n%s", name, v)
		}
	}
}

// A label from a trace that holds escape sequences is shown as text: it cannot clear the screen,
// recolour it or shift a column (the interning table makes it printable).
func TestLabelEscapesNeverReachTheTerminal(t *testing.T) {
	strs := timeline.NewStrings()
	w := timeline.NewWindow(0, strs)
	evil := strs.ID("\x1b[2J\x1b[31mevil\x1b[ 0A")
	for i := range int64(20) {
		w.Emit(&timeline.Event{Kind: timeline.KindKernel, Device: 0, Peer: -1, Stream: 1, Start: i * 10, End: i*10 + 8, Label: evil})
	}
	src := &fakeSource{win: w, info: SourceInfo{Name: "x", Replay: true, Meta: timeline.Meta{Backend: "kineto", Devices: 1}}, status: Status{Done: true}}
	m := sized(src, 160, 40)
	press(m, "7")
	frame := m.View().Content
	if !strings.Contains(frame, "evil") {
		t.Fatalf("the events view does not show the label:\n%s", text(m))
	}
	for _, seq := range []string{"\x1b[2J", "\x1b[31mevil", "\x1b[ 0A"} {
		if strings.Contains(frame, seq) {
			t.Errorf("the frame holds the label's %q", seq)
		}
	}
	checkFrame(t, frame, 160, 40)
}

// Above a screenful of GPUs the overview rolls them up by host (a host's row is its most idle
// GPU's), sorts most idle first on s, expands a host on enter, and scrolls with j/k, the wheel
// and g/G like every list.
func TestOverviewAtScale(t *testing.T) {
	m := sized(clusterSource(t, 256), 160, 45)
	rowsOf := func() []string {
		var out []string
		_, table, _ := strings.Cut(text(m), "\ngpu ") // the rows under the table's head
		for _, l := range strings.Split(table, "\n") {
			if f := strings.Fields(l); len(f) > 0 && (strings.HasPrefix(f[0], "▸h") || strings.HasPrefix(f[0], "▾h") || isNum(f[0])) {
				out = append(out, f[0])
			}
		}
		return out
	}
	if r := rowsOf(); len(r) != 32 || r[0] != "▸h0" || r[31] != "▸h31" {
		t.Fatalf("256 GPUs at 160×45: rows %v; want a row per host, h0 … h31", r)
	}
	press(m, "s")
	// Most idle first: hosts 0 (GPU 5), 3, 12 and 24 have a GPU 90% idle; by id among them.
	if r := rowsOf(); r[0] != "▸h0" || r[1] != "▸h3" || r[2] != "▸h12" || r[3] != "▸h24" {
		t.Fatalf("most idle first: rows %v; want h0, h3, h12, h24 first", r[:4])
	}
	press(m, "j", "enter")
	if r := rowsOf(); r[1] != "▾h3" || r[2] != "24" || r[9] != "31" || r[10] != "▸h12" {
		t.Fatalf("host 3 expanded: rows %v; want its 8 GPUs under it", r[:12])
	}
	press(m, "enter")
	if r := rowsOf(); len(r) != 32 {
		t.Fatalf("host 3 collapsed again: %d rows; want 32", len(r))
	}
	// 4,096 GPUs at 80×24: 512 host rows scroll.
	m = sized(clusterSource(t, 4096), 80, 24)
	if !strings.Contains(text(m), "rows 1–15 of 512 (j/k, wheel, g/G scroll)") {
		t.Fatalf("4,096 GPUs at 80×24 do not scroll by host:\n%s", text(m))
	}
	press(m, "G")
	if r := rowsOf(); r[len(r)-1] != "▸h511" || !strings.Contains(text(m), "rows 498–512 of 512") {
		t.Fatalf("G: rows %v; want the last host at the bottom:\n%s", r, text(m))
	}
	m.Update(tea.MouseWheelMsg{Button: tea.MouseWheelUp})
	if !strings.Contains(text(m), "of 512") || m.Tab() != TabOverview {
		t.Fatal("the wheel left the overview")
	}
}

func isNum(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}
