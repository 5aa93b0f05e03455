package widget

import (
	"slices"
	"testing"

	"github.com/xfertop/xfertop/analysis"
)

// Every device the analysis has a row of has a position, the ids past the job's after its own by
// id, with its own figures; the devices of the job that ran nothing have rows of zeros.
func TestDeviceRows(t *testing.T) {
	const top = 1<<31 - 1
	for _, c := range []struct {
		name      string
		links     []int32 // the analysis's links rows (as analysis.Links lists them)
		times     []int32 // its breakdown rows
		described int
		want      []int32 // the ids by position
	}{
		{"dense", []int32{0, 1, 2, 3}, []int32{0, 1, 2, 3}, 4, []int32{0, 1, 2, 3}},
		{"padded to the job", []int32{0, 1}, []int32{1}, 4, []int32{0, 1, 2, 3}},
		{"far ids after the job's", []int32{0, 1, 2, 20000, top}, []int32{2, 20000, top}, 2, []int32{0, 1, 2, 20000, top}},
		{"far ids in times only", []int32{0}, []int32{0, 20000}, 0, []int32{0, 20000}},
		{"only far ids", []int32{20000, top}, []int32{top}, 0, []int32{20000, top}},
		{"sparse trace ids: no phantoms", []int32{4464, 70000}, []int32{4464, 70000}, 2, []int32{4464, 70000}},
		{"sparse ids below the description's", []int32{1, 4464}, []int32{4464}, 2, []int32{1, 4464}},
		{"a job past the analysis's arrays", []int32{0, 1, analysis.MaxDevices + 5}, nil, analysis.MaxDevices + 10, nil},
		{"a bogus description", nil, nil, 1 << 30, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := &analysis.Result{}
			// As the analysis lists them: a row per id below analysis.MaxDevices up to the largest
			// (zeros for those that moved nothing), then the others.
			for _, d := range c.links {
				for d < analysis.MaxDevices && int32(len(res.Links.Devices)) < d {
					res.Links.Devices = append(res.Links.Devices, analysis.DeviceLinks{Device: int32(len(res.Links.Devices))})
				}
				res.Links.Devices = append(res.Links.Devices, analysis.DeviceLinks{Device: d, NIC: int64(d) + 1, Total: int64(d) + 1})
			}
			for _, d := range c.times {
				res.Breakdown.Devices = append(res.Breakdown.Devices, analysis.DeviceTime{Device: d, SpanNs: int64(d) + 7})
			}
			var r DeviceRows
			r.Of(res, c.described)
			var got []int32
			for p := range r.Len() {
				got = append(got, r.ID(p))
			}
			switch c.name {
			case "a job past the analysis's arrays":
				if r.Len() != analysis.MaxDevices+10 || r.ID(analysis.MaxDevices+5) != analysis.MaxDevices+5 {
					t.Fatalf("%d positions, %d at %d", r.Len(), r.ID(analysis.MaxDevices+5), analysis.MaxDevices+5)
				}
			case "a bogus description":
				if r.Len() > maxDescribed {
					t.Fatalf("%d positions for a description of 2³⁰ devices; want at most %d", r.Len(), maxDescribed)
				}
			default:
				if !slices.Equal(got, c.want) {
					t.Fatalf("ids by position %v; want %v", got, c.want)
				}
			}
			for p := range r.Len() {
				id := r.ID(p)
				if q, ok := r.Pos(id); !ok || q != p {
					t.Errorf("Pos(%d) = %d, %v; want %d", id, q, ok, p)
				}
				l := r.Links()[p]
				if l.Device != id {
					t.Errorf("links at %d are device %d's; want %d's", p, l.Device, id)
				}
				if has := slices.Contains(c.links, id); has && (!r.Linked(p) || l.NIC != int64(id)+1) || !has && l.NIC != 0 {
					t.Errorf("device %d: linked %v, NIC %d; the analysis has a row: %v", id, r.Linked(p), l.NIC, has)
				}
				tm, ok := r.Time(p)
				if has := slices.Contains(c.times, id); ok != has || has && tm.SpanNs != int64(id)+7 || r.Times()[p].Device != id {
					t.Errorf("device %d: time %+v, %v; the analysis has a row: %v", id, tm, ok, has)
				}
			}
			if _, ok := r.Pos(12345); ok && !slices.Contains(got, 12345) && c.name != "a job past the analysis's arrays" {
				t.Error("a device the job does not have has a position")
			}
		})
	}
}

// The rows are made once per Result: drawn again from the same Result, the same rows, not a new
// copy; from another, anew; a Result with a row for every device is read as it is.
func TestDeviceRowsOncePerResult(t *testing.T) {
	res := &analysis.Result{Links: analysis.Links{Devices: []analysis.DeviceLinks{{Device: 0, NIC: 5}, {Device: 1}}}}
	var r DeviceRows
	if !r.Of(res, 4) {
		t.Fatal("a first Result changed nothing")
	}
	got := r.Links()
	if len(got) != 4 || got[0].NIC != 5 || got[2].Device != 2 || got[3].Device != 3 {
		t.Fatalf("padded to %d: %+v", len(got), got)
	}
	if r.Of(res, 4) || &r.Links()[0] != &got[0] {
		t.Error("the same Result's devices were padded again")
	}
	if !r.Of(&analysis.Result{Links: res.Links}, 4) || &r.Links()[0] == &got[0] {
		t.Error("another Result's devices were taken from the last one's")
	}
	if r.Of(res, 2); &r.Links()[0] != &res.Links.Devices[0] {
		t.Error("a Result with every device was copied")
	}
}
