package cluster

import (
	"fmt"
	"math"
	"slices"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/analysis/hostmap"
	"github.com/xfertop/xfertop/ui/widget"
)

// Metric is a figure the heatmap shows, one value per device. The value is the analysis's
// (analysis.DeviceTime, analysis.DeviceLinks); the view only places and formats it. Another
// figure, such as the findings against a device, is one more Metric in Metrics.
type Metric struct {
	Name string // what the title and the legend call it
	Unit string // printed after a value ("%")
	// Max is the top of the scale the glyphs split in five (100 for a percentage); 0 takes the
	// largest value of the frame.
	Max float64
	// HighIsBad says which end is worst: the colours and the worst lists follow it.
	HighIsBad bool
	// Value returns the figure of the device at position p (Devices), false when it is unknown.
	Value func(ds *Devices, d int32) (float64, bool)
}

// Metrics returns the metrics the view cycles through, in order.
func Metrics() []Metric {
	ms := []Metric{
		{Name: "busy %", Unit: "%", Max: 100, Value: func(ds *Devices, d int32) (float64, bool) {
			t, ok := ds.Time(d)
			if !ok {
				return 0, false
			}
			return t.BusyPct()
		}},
		{Name: "idle %", Unit: "%", Max: 100, HighIsBad: true, Value: func(ds *Devices, d int32) (float64, bool) {
			t, ok := ds.Time(d)
			if !ok || !t.Known() {
				return 0, false
			}
			return t.IdlePct, true
		}},
	}
	for l := range analysis.NumLinks {
		ms = append(ms, Metric{Name: l.String() + " % of peak", Unit: "%", Max: 100, HighIsBad: true,
			Value: func(ds *Devices, d int32) (float64, bool) { return ds.LinkPct(l, d) }})
	}
	ms = append(ms, Metric{Name: "findings (confidence %)", Unit: "%", Max: 100, HighIsBad: true,
		Value: func(ds *Devices, d int32) (float64, bool) { return ds.FindingPct(d) }})
	return ms
}

// FindingPct is the confidence, as a percentage, of the most confident finding of the diagnosis
// that names the device at position p as its culprit, or names its host when it names no device;
// 0 when none does (the diagnosis runs on every source, so no finding is a known 0).
func (ds *Devices) FindingPct(p int32) (float64, bool) {
	if ds.res == nil || p < 0 || int(p) >= ds.N() {
		return 0, false
	}
	d := ds.rows.ID(int(p))
	host, known := ds.hosts.Host(d)
	best := 0.0
	for _, f := range ds.res.Findings {
		if f.Rank == d || (f.Rank < 0 && f.Host >= 0 && known && f.Host == host) {
			best = max(best, 100*f.Confidence)
		}
	}
	return best, true
}

// Devices is what the metrics read of one frame: the analysis's rows by device, at the positions
// every view lists the devices at (widget.DeviceRows: device ids up to 2³¹−1, the ids past the
// job's after its own). Its methods take a position, which is the device id for every device of
// a job that numbers its devices from 0. It is rebuilt when the frame's Result changes and
// read-only after.
type Devices struct {
	fr   *widget.Frame
	res  *analysis.Result
	rows widget.DeviceRows
	// hosts places the devices: the analysis's host map (Result.Hosts), which placed the links and
	// the findings; the run's description's where a Result carries none.
	hosts *hostmap.Map
	// groups are the heatmap's hosts: each one's devices by position, the hosts in order of their
	// number, the devices of unknown host last (hostmap.Map.Layout). group and local are, by
	// position, its host's index in groups and its place among that host's devices.
	groups       []hostGroup
	group, local []int32
	ids          []int32      // by position, the device ids groups were made for
	placedBy     *hostmap.Map // the map they were made by
}

// hostGroup is one host's devices, by position.
type hostGroup struct {
	host  int32 // -1: the devices whose host is unknown
	known bool
	name  string // the host's name where a source of the job named it (the host map's), else ""
	pos   []int32
}

// label names the host as the breadcrumb and the lists do: its name where a source named it,
// else its number, ? when unknown.
func (g hostGroup) label() string {
	switch {
	case !g.known:
		return "?"
	case g.name != "":
		return g.name
	}
	return fmt.Sprint(g.host)
}

// maxLabel is the widest a host's name is drawn beside the heatmap's rows and in the worst lists:
// a job's names share their start ("gpu-node-0417"), so a longer one keeps its end.
const maxLabel = 12

// shortLabel is label no wider than w: a longer name's end, after an ellipsis.
func (g hostGroup) shortLabel(w int) string {
	l := g.label()
	if r := []rune(l); len(r) > w {
		return "…" + string(r[len(r)-w+1:])
	}
	return l
}

// Reset points ds at fr's Result; it reports whether that changed anything.
func (ds *Devices) Reset(fr *widget.Frame) bool {
	if ds.res == fr.Res && ds.fr == fr && ds.res != nil {
		return false
	}
	ds.fr, ds.res = fr, fr.Res
	ds.rows.Of(fr.Res, fr.Meta.Devices)
	ds.hosts = nil
	if fr.Res != nil {
		ds.hosts = fr.Res.Hosts
	}
	if ds.hosts == nil {
		ds.hosts = hostmap.New(fr.Meta)
	}
	ds.place()
	return true
}

// place groups the devices by host, as the host map has them: again only when the map learned
// something or the devices changed (a live console's Result changes every frame; its hosts
// seldom do).
func (ds *Devices) place() {
	n := ds.N()
	same := ds.placedBy == ds.hosts && len(ds.ids) == n
	ds.ids = slices.Grow(ds.ids[:0], n)[:n]
	for p := range n {
		id := ds.rows.ID(p)
		same = same && ds.ids[p] == id
		ds.ids[p] = id
	}
	if same {
		return
	}
	ds.placedBy = ds.hosts
	lay := ds.hosts.Layout(ds.ids)
	ds.groups = ds.groups[:0]
	ds.group = slices.Grow(ds.group[:0], n)[:n]
	ds.local = slices.Grow(ds.local[:0], n)[:n]
	for gi, g := range lay {
		hg := hostGroup{host: g.Host, known: g.Known, pos: make([]int32, len(g.Devs))}
		hg.name, _ = ds.hosts.Name(g.Host)
		for l, id := range g.Devs {
			p, _ := ds.rows.Pos(id)
			hg.pos[l] = int32(p)
			ds.group[p], ds.local[p] = int32(gi), int32(l)
		}
		ds.groups = append(ds.groups, hg)
	}
}

// LocalIndex is the index of the device at position p among its host's GPUs, where the host map
// knows it (hostmap.Map.Local: the topology's or a count's), and whether it does.
func (ds *Devices) LocalIndex(p int32) (int32, bool) { return ds.hosts.Local(ds.ID(p)) }

// Groups is the heatmap's hosts, in order (read-only).
func (ds *Devices) Groups() []hostGroup { return ds.groups }

// Place returns the index in Groups of the host of the device at position p, and the device's
// place among that host's devices.
func (ds *Devices) Place(p int32) (group, local int) { return int(ds.group[p]), int(ds.local[p]) }

// HostGroup returns the index in Groups of host h; false for a host no device is on.
func (ds *Devices) HostGroup(h int) (int, bool) {
	for i, g := range ds.groups {
		if g.known && int(g.host) == h {
			return i, true
		}
	}
	return 0, false
}

// N is how many devices the job has (the largest id seen + 1 when the run's description says
// fewer, and one more for each device with an id past those).
func (ds *Devices) N() int { return ds.rows.Len() }

// ID is the device id at position p.
func (ds *Devices) ID(p int32) int32 { return ds.rows.ID(int(p)) }

// Pos is device id's position; false for a device the job does not have.
func (ds *Devices) Pos(id int32) (int32, bool) {
	p, ok := ds.rows.Pos(id)
	return int32(p), ok
}

// Time returns the temporal breakdown of the device at position p; false when it ran nothing yet.
func (ds *Devices) Time(p int32) (analysis.DeviceTime, bool) { return ds.rows.Time(int(p)) }

// LinkPct is link l of the device at position p as a percentage of its peak: over the newest
// complete history bucket while the source runs, over the whole run once it has ended (its last
// bucket would say only how the run ended).
func (ds *Devices) LinkPct(l analysis.Link, p int32) (float64, bool) {
	if ds.res == nil || p < 0 || int(p) >= ds.N() {
		return 0, false
	}
	if !ds.rows.Linked(int(p)) {
		// Nothing counted on the device's links yet: where the source measures its links, they
		// carried nothing (a job's first communicator setup); otherwise it is not known.
		return 0, ds.fr.Meta.LinkBytes && ds.fr.Meta.LinkPeaks[l] > 0
	}
	dl := &ds.rows.Links()[p]
	if !dl.Known(l) {
		return 0, false // part of its bytes are in no source: the report's "≥" or "—"
	}
	peak := ds.fr.Meta.LinkPeaks[l]
	if ds.fr.Live {
		return dl.PctOfPeak(l, ds.fr.State.Now/analysis.BucketNs-1, peak)
	}
	return dl.MeanPctOfPeak(l, ds.res.DurationNs, peak)
}

// LinkWhen says over what time LinkPct is taken.
func (ds *Devices) LinkWhen() string {
	if ds.fr != nil && ds.fr.Live {
		return "over the last 50 ms"
	}
	return "mean over the run"
}

// Fill writes metric m's value of every device into vals (resized to N), NaN where unknown.
func (ds *Devices) Fill(m Metric, vals []float64) []float64 {
	vals = slices.Grow(vals[:0], ds.N())[:ds.N()]
	for d := range vals {
		v, ok := m.Value(ds, int32(d))
		if !ok {
			v = math.NaN()
		}
		vals[d] = v
	}
	return vals
}

// worse reports whether a is worse than b under m; an unknown value is never worse.
func (m Metric) worse(a, b float64) bool {
	switch {
	case math.IsNaN(a):
		return false
	case math.IsNaN(b):
		return true
	case m.HighIsBad:
		return a > b
	}
	return a < b
}

// shown is a value as the view writes it, to a tenth of its unit (fmtVal): two values that read
// the same are a tie.
func shown(x float64) float64 { return math.Round(x*10) / 10 }

// before reports whether device a, of value x, ranks before device b, of value y, wherever the
// view names the worst: the worst lists, a host's worst GPU, a cell's worst device (the cursor
// names it). The worse value as shown comes first; a tie goes to the lower device id, so the lists
// and the cursor name the same device whatever order the devices were seen in. An unknown value
// never ranks before.
func (m Metric) before(x float64, a int32, y float64, b int32) bool {
	sx, sy := shown(x), shown(y)
	if sx != sy || math.IsNaN(sx) {
		return m.worse(sx, sy)
	}
	return a < b
}

// order says which end the worst lists start from.
func (m Metric) order() string {
	if m.HighIsBad {
		return "highest first"
	}
	return "lowest first"
}
