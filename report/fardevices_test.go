package report

import (
	"slices"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/timeline"
)

// TestFarDevices: devices past the per-device tables' bound are named in a warning, and no rows
// are made up for ids 0..n-1 that the job's devices do not have (a trace's own device numbers).
func TestFarDevices(t *testing.T) {
	res := &analysis.Result{Breakdown: analysis.Breakdown{FarDevices: 1, FirstFarDevice: 20000}}
	r := Build(res, timeline.Meta{Devices: 1}, Run{})
	if len(r.Idle.Devices) != 0 || len(r.Warnings) != 1 || !strings.HasPrefix(r.Warnings[0], "device 20000: ids of 16384 and above are past the bound") {
		t.Errorf("rows %v, warnings %q; want no rows and the device named", r.Idle.Devices, r.Warnings)
	}
	for _, c := range []struct {
		name string
		devs []int32
		n    int
		want []int32
	}{
		{"a rank that ran nothing is listed", []int32{0, 2}, 3, []int32{0, 1, 2}},
		{"sparse ids: no phantoms", []int32{4464}, 2, []int32{4464}},
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
