package cluster

import (
	"math"
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/xfertop/xfertop/analysis"
	xtimeline "github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/agg"
	"github.com/xfertop/xfertop/ui/theme"
	"github.com/xfertop/xfertop/ui/widget"
)

// uniform is the hosts of a job of n devices, gpus a host, numbered as a topology numbers them.
func uniform(n, gpus int) []hostGroup {
	var out []hostGroup
	for d := 0; d < n; d += gpus {
		g := hostGroup{host: int32(d / gpus), known: true}
		for p := d; p < min(d+gpus, n); p++ {
			g.pos = append(g.pos, int32(p))
		}
		out = append(out, g)
	}
	return out
}

func TestLayout(t *testing.T) {
	tests := []struct {
		name                   string
		h0, h1, gpus, n, w, h  int
		hg, gg, rows, cols, pn int
	}{
		{"16 GPUs: a cell each", 0, 2, 8, 16, 51, 16, 1, 1, 2, 8, 1},
		// 512 hosts in 4 panels of 16 rows: 8 hosts a row.
		{"4,096 GPUs at 80×24", 0, 512, 8, 4096, 51, 16, 8, 1, 64, 8, 4},
		// 13 panels of 42 rows hold 546 hosts: a cell per GPU, spread over 13 panels.
		{"4,096 GPUs at 200×50", 0, 512, 8, 4096, 171, 42, 1, 1, 512, 8, 13},
		// 72 GPUs a host in 40 columns: 2 GPUs a cell.
		{"NVL72 narrow", 0, 4, 72, 288, 40, 10, 1, 2, 4, 36, 1},
		// A drilled-down range of hosts keeps its own numbers.
		{"hosts 128–135", 128, 136, 8, 4096, 51, 16, 1, 1, 8, 8, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := layout(tt.h0, tt.h1, uniform(tt.n, tt.gpus), tt.gpus, tt.w, tt.h)
			if g.hg != tt.hg || g.gg != tt.gg || g.rows != tt.rows || g.cols != tt.cols || g.panels != tt.pn {
				t.Errorf("layout = hosts/row %d, GPUs/cell %d, rows %d, cols %d, panels %d; want %d, %d, %d, %d, %d",
					g.hg, g.gg, g.rows, g.cols, g.panels, tt.hg, tt.gg, tt.rows, tt.cols, tt.pn)
			}
			if g.perPane > tt.h || g.panels*g.panelW-1 > tt.w {
				t.Errorf("layout %+v does not fit %d×%d", g, tt.w, tt.h)
			}
			seen := map[int32]int{}
			for r := range g.rows {
				for c := range g.cols {
					g.devices(r, c, func(d int32) { seen[d]++ })
				}
			}
			if want := (tt.h1 - tt.h0) * tt.gpus; len(seen) != want {
				t.Errorf("the cells cover %d devices; want %d", len(seen), want)
			}
			for d, k := range seen {
				if k != 1 {
					t.Errorf("device %d is in %d cells", d, k)
				}
			}
		})
	}
}

func TestGridAt(t *testing.T) {
	g := layout(0, 512, uniform(4096, 8), 8, 51, 16) // 4 panels of 16 rows, panel width 13 (label 4)
	for _, tc := range []struct {
		x, y, r, c int
		ok         bool
	}{{4, 0, 0, 0, true}, {11, 2, 2, 7, true}, {13 + 4, 0, 16, 0, true}, {0, 0, 0, 0, false}, {12, 0, 0, 0, false}, {4, 16, 0, 0, false}} {
		r, c, ok := g.at(tc.x, tc.y)
		if ok != tc.ok || ok && (r != tc.r || c != tc.c) {
			t.Errorf("at(%d, %d) = %d, %d, %v; want %d, %d, %v", tc.x, tc.y, r, c, ok, tc.r, tc.c, tc.ok)
		}
	}
}

func TestTopK(t *testing.T) {
	low := Metric{}                 // low is bad
	high := Metric{HighIsBad: true} // high is bad
	vals := []float64{50, math.NaN(), 10, 90, 30, 10, 70}
	for _, tc := range []struct {
		m    Metric
		want []int
	}{{low, []int{2, 5, 4}}, {high, []int{3, 6, 0}}} {
		var rs []ranked
		for i, v := range vals {
			rs = topK(rs, ranked{id: i, dev: int32(i), val: v}, 3, tc.m)
		}
		var got []int
		for _, r := range rs {
			got = append(got, r.id)
		}
		if len(got) != len(tc.want) || got[0] != tc.want[0] || got[1] != tc.want[1] || got[2] != tc.want[2] {
			t.Errorf("topK(HighIsBad %v) = %v; want %v (ties to the lower device; unknown never listed)", tc.m.HighIsBad, got, tc.want)
		}
	}
}

// TestWorstTies: values that read the same (to the tenth shown) are a tie, and a tie goes to the
// lower device wherever the view names the worst: the worst GPUs, a host's worst GPU and the
// cursor's cell. Device 3 (idle 49.96%) and device 11 (49.99%) both read 50.0%: device 3 is named
// first, though 11 is a hair worse.
func TestWorstTies(t *testing.T) {
	v := idleView(t, 1024, 8, func(d int32) float64 {
		switch d {
		case 3:
			return 49.96
		case 11:
			return 49.99
		}
		return 10
	})
	out := ansi.Strip(v.View())
	if !strings.Contains(out, "cell: worst of") {
		t.Fatalf("the heatmap does not group hosts at this size:\n%s", out)
	}
	lines := strings.Split(out, "\n")
	var gpuRows, hostRows []string
	for _, l := range lines {
		if i := strings.Index(l, "gpu "); i >= 0 && !strings.Contains(l, "host ") {
			gpuRows = append(gpuRows, strings.Join(strings.Fields(l[i:]), " "))
		}
		if i := strings.Index(l, "host 0 "); i >= 0 {
			hostRows = append(hostRows, strings.Join(strings.Fields(l[i:]), " "))
		}
	}
	if len(gpuRows) < 2 || gpuRows[0] != "gpu 3 h0 50.0%" || gpuRows[1] != "gpu 11 h1 50.0%" {
		t.Errorf("worst GPUs %q; want gpu 3 then gpu 11 (a tie as shown goes to the lower id)\n%s", gpuRows, out)
	}
	if len(hostRows) != 1 || hostRows[0] != "host 0 gpu 3 50.0%" {
		t.Errorf("worst hosts %q; want host 0 by gpu 3\n%s", hostRows, out)
	}
	// The cursor on the cell holding both names the same device.
	v.Update(tea.KeyPressMsg{Code: 'l', Text: "l"})
	v.Update(tea.KeyPressMsg{Code: 'l', Text: "l"})
	v.Update(tea.KeyPressMsg{Code: 'l', Text: "l"})
	if out := ansi.Strip(v.View()); !strings.Contains(out, "GPU 3: worst gpu 3, 50.0%") {
		t.Errorf("the cursor's cell does not name gpu 3:\n%s", out)
	}
}

// The worst lists of a metric whose high values are bad stop at the last device with any: GPUs
// at 0.0% are not "worst" (a 1,024-GPU run's one culprit once stood above thirteen of them), and
// a cluster with none says so.
func TestWorstListsLeaveOutNothingBad(t *testing.T) {
	const hosts, gpus = 128, 8
	for _, c := range []struct {
		name    string
		culprit int32 // -1: none
		want    []string
	}{
		{"one culprit", 299, []string{"gpu 299 h37 40.0%"}},
		{"none", -1, nil},
	} {
		v := idleView(t, hosts, gpus, func(d int32) float64 {
			if d == c.culprit {
				return 40
			}
			return 0
		})
		out := ansi.Strip(v.View())
		var gpuRows []string
		for _, l := range strings.Split(out, "\n") {
			if i := strings.Index(l, "gpu "); i >= 0 && !strings.Contains(l, "host ") && !strings.Contains(l, "worst") && !strings.Contains(l, "GPU") {
				gpuRows = append(gpuRows, strings.Join(strings.Fields(l[i:]), " "))
			}
		}
		if !slices.Equal(gpuRows, c.want) {
			t.Errorf("%s: worst GPUs %q; want %q\n%s", c.name, gpuRows, c.want, out)
		}
		if c.culprit < 0 && strings.Count(out, "none above") != 2 {
			t.Errorf("%s: the lists do not say none is above 0\n%s", c.name, out)
		}
	}
}

// idleView is the cluster view of hosts × gpus devices whose idle % idle gives, showing idle, at
// 120×40.
func idleView(t *testing.T, hosts, gpus int, idle func(d int32) float64) *Model {
	t.Helper()
	res := &analysis.Result{}
	for d := int32(0); d < int32(hosts*gpus); d++ {
		res.Breakdown.Devices = append(res.Breakdown.Devices, analysis.DeviceTime{Device: d, SpanNs: 1e9, IdlePct: idle(d)})
	}
	fr := &widget.Frame{Res: res, State: agg.New(), Meta: xtimeline.Meta{Devices: hosts * gpus, GPUsPerHost: gpus},
		Styles: theme.DefaultStyles(true), Keys: widget.DefaultKeyMap()}
	v := New(fr)
	v.SetSize(120, 40)
	if !v.SetMetric("idle") {
		t.Fatal("no idle metric")
	}
	return v
}

// A metric no GPU has a figure for says so in both worst lists rather than leave them empty, which
// reads as the view failing.
func TestWorstListsOfAnUnknownMetric(t *testing.T) {
	fr := &widget.Frame{Res: &analysis.Result{}, State: agg.New(), Meta: xtimeline.Meta{Devices: 16, GPUsPerHost: 8},
		Styles: theme.DefaultStyles(true), Keys: widget.DefaultKeyMap()}
	v := New(fr)
	v.SetSize(120, 40)
	if !v.SetMetric("idle") {
		t.Fatal("no idle metric")
	}
	if out := ansi.Strip(v.View()); strings.Count(out, "unknown for every GPU") != 2 || strings.Contains(out, "none above") {
		t.Errorf("worst lists of a metric known for no GPU:\n%s", out)
	}
}
