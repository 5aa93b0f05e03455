package report

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/timeline"
)

// TestFarDevices: devices with ids past 16,383 are in the per-device rows with their time, the
// header's count and the link table's agree, and no rows are made up for ids 0..n-1 that the
// job's devices do not have (a trace's own device numbers).
func TestFarDevices(t *testing.T) {
	k := func(dev int32, ns int64) timeline.Event {
		return timeline.Event{Kind: timeline.KindKernel, Device: dev, Stream: 7, Start: 1, End: 1 + ns}
	}
	r := build([]timeline.Event{k(70000, 1_000_000), k(4464, 5000)}, timeline.NewStrings(), timeline.Meta{Devices: 2, IdleMode: timeline.IdleHTA})
	var rows []string
	for _, d := range r.Idle.Devices {
		rows = append(rows, fmt.Sprintf("%d:%d", d.Device, d.BusyNs))
	}
	if want := []string{"4464:5000", "70000:1000000"}; !slices.Equal(rows, want) || len(r.Warnings) != 0 {
		t.Errorf("rows (device:busy ns) %v, warnings %q; want %v and no warning", rows, r.Warnings, want)
	}
	// A source that counted fewer devices than ran ops (a trace's importer counts up to 65,536):
	// the header counts every device with a row.
	r = build([]timeline.Event{k(1, 10), k(70000, 10), k(80000, 10)}, timeline.NewStrings(), timeline.Meta{Devices: 2, IdleMode: timeline.IdleHTA})
	if r.Devices != 3 {
		t.Errorf("header counts %d devices; want the 3 with rows", r.Devices)
	}
	// Past SummariseAbove devices the link table is summarised "Across N devices": N is the
	// devices present, not the largest id + 1.
	ev := []timeline.Event{k(4464, 5000), k(70000, 1_000_000)}
	for i := range int64(SummariseAbove) {
		ev = append(ev, k(int32(100_000+i*1000), 1000))
	}
	r = build(ev, timeline.NewStrings(), timeline.Meta{Devices: len(ev), IdleMode: timeline.IdleHTA})
	var b strings.Builder
	if err := TextWith(&b, r, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("Across %d devices", len(ev)); !strings.Contains(b.String(), want) {
		t.Errorf("text lacks %q:\n%s", want, b.String())
	}
	for _, c := range []struct {
		name string
		devs []int32
		n    int
		want []int32
	}{
		{"a rank that ran nothing is listed", []int32{0, 2}, 3, []int32{0, 1, 2}},
		{"sparse ids: no phantoms", []int32{4464}, 2, []int32{4464}},
		{"sparse ids past 16,383: no phantoms", []int32{4464, 70000}, 2, []int32{4464, 70000}},
	} {
		var devs []analysis.DeviceTime
		for _, d := range c.devs {
			devs = append(devs, analysis.DeviceTime{Device: d})
		}
		var got []int32
		for _, d := range everyDevice(devs, c.n) {
			got = append(got, d.Device)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: everyDevice(%v, %d) = %v; want %v", c.name, c.devs, c.n, got, c.want)
		}
	}
}
