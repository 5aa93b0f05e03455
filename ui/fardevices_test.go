package ui

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/units"
)

// farTrace is a finished trace whose devices are numbered 0, 20,000 and 2³¹−1 (a trace's own
// device numbers, as an importer hands them on), each running kernels for a share of its span
// that differs, and copying bytes; with the analysis's figures of the same events, worked out
// apart from the console.
func farTrace(t testing.TB) (*fakeSource, *analysis.Result) {
	t.Helper()
	meta := timeline.Meta{Source: "trace.json", Backend: "kineto", Topology: "unknown", Devices: 3, IdleMode: timeline.IdleHTA}
	strs := timeline.NewStrings()
	var evs []timeline.Event
	for i, d := range []int32{0, 20_000, 1<<31 - 1} {
		busy := int64(200_000 * (i + 1))
		evs = append(evs,
			timeline.Event{Kind: timeline.KindKernel, Device: d, Peer: -1, Stream: 7, Start: 0, End: busy, Queued: -1},
			timeline.Event{Kind: timeline.KindMemcpy, Sub: uint8(timeline.CopyD2D), Device: d, Peer: -1, Stream: 9, Start: busy, End: busy + 100_000, Bytes: 1 << 20, Queued: -1},
			timeline.Event{Kind: timeline.KindKernel, Device: d, Peer: -1, Stream: 7, Start: 900_000, End: 1_000_000, Queued: -1})
	}
	an := analysis.New(meta)
	win := timeline.NewWindow(1<<16, strs)
	for i := range evs {
		an.Emit(&evs[i])
		win.Emit(&evs[i])
	}
	return &fakeSource{win: win, info: SourceInfo{Name: "trace.json", Meta: meta}, status: Status{Speed: 1, Done: true}}, an.Result(strs)
}

// Devices 20,000 and 2³¹−1 are in the console's overview, idle view and cluster view, and :rank
// reaches them, with the analysis's own figures: the console stopped at 16,384.
func TestFarDevicesInConsole(t *testing.T) {
	src, res := farTrace(t)
	if len(res.Breakdown.Devices) != 3 {
		t.Fatalf("the analysis has %d device rows; want 3", len(res.Breakdown.Devices))
	}
	m := sized(src, 160, 45)
	overview := text(m)
	press(m, "5")
	idle := text(m)
	for _, tm := range res.Breakdown.Devices {
		// The overview's row: the device, its compute, non-compute and idle shares.
		row := regexp.MustCompile(fmt.Sprintf(`(?m)^%d +%s +%s +%s `, tm.Device,
			regexp.QuoteMeta(units.Share(tm.ComputePct)), regexp.QuoteMeta(units.Share(tm.NonCompPct)), regexp.QuoteMeta(units.Share(tm.IdlePct))))
		if !row.MatchString(overview) {
			t.Errorf("the overview lacks device %d's row %s:\n%s", tm.Device, row, overview)
		}
		irow := regexp.MustCompile(fmt.Sprintf(`(?m)^%d +%.1f +%.1f +%.1f `, tm.Device, tm.IdlePct, tm.ComputePct, tm.NonCompPct))
		if !irow.MatchString(idle) {
			t.Errorf("the idle view lacks device %d's row %s:\n%s", tm.Device, irow, idle)
		}
	}
	// The cluster view's heatmap holds the three; its host lists them, each with its busy share (a
	// host the trace does not say: their local index unknown, —).
	press(m, "8")
	if cl := text(m); !strings.Contains(cl, "1 host × 3 GPUs") {
		t.Errorf("the cluster view does not count the 3 devices:\n%s", cl)
	}
	press(m, "enter")
	cl := text(m)
	for _, tm := range res.Breakdown.Devices {
		busy, _ := tm.BusyPct()
		want := regexp.MustCompile(fmt.Sprintf(`(?m)^%d +— +\S+ +%.1f%% +%.1f `, tm.Device, busy, tm.IdlePct))
		if !want.MatchString(cl) {
			t.Errorf("host 0 lacks %s:\n%s", want, cl)
		}
	}
	// :rank goes to a device past 16,384 by its id, and its GPU level is that device's.
	for _, id := range []string{"20000", "2147483647"} {
		press(m, append([]string{":"}, append(strings.Split("rank "+id, ""), "enter")...)...)
		got := text(m)
		if strings.Contains(got, "give a rank") {
			t.Fatalf(":rank %s refused:\n%s", id, got)
		}
		press(m, "8")
		if got := text(m); !strings.Contains(got, "gpu "+id) {
			t.Errorf(":rank %s: the cluster view is not at its GPU:\n%s", id, got)
		}
	}
	press(m, ":", "r", "a", "n", "k", " ", "5", "enter")
	if got := text(m); !strings.Contains(got, ":rank 5: give a rank (GPU) one of 0, 20000 or 2147483647") {
		t.Errorf(":rank 5 of a job without device 5 does not say which it has:\n%s", got)
	}
}
