package widget

import (
	"cmp"
	"slices"

	"github.com/xfertop/xfertop/analysis"
)

// maxDescribed bounds the devices a run's description may make rows for before they report: a
// bogus count in a file's header must not allocate gigabytes (a 100,000-GPU job's devices past it
// are listed as they report, as the analysis lists them).
const maxDescribed = 8 * analysis.MaxDevices

// DeviceRows is the job's devices as every view lists them, one position each, for one Result:
// positions 0 to N-1 are devices 0 to N-1 (N the devices the run's description names), those that
// ran nothing yet included; then one position for each other device the analysis has figures of
// (an op of its own, bytes on a link), by id, whatever its id (a 100,000-GPU job past its
// description, a trace's sparse ids up to 2³¹−1), as the report lists them: no rows made up for
// ids a trace numbering its devices otherwise does not have. So a device the analysis counts is a
// device every view shows, with the analysis's own figures, and the state is sized by the devices
// present, never by the largest id. It is rebuilt by Of when the Result changes and is
// read-only after.
type DeviceRows struct {
	res       *analysis.Result
	described int
	n         int                    // positions 0..n-1 are their own ids
	far       []int32                // by position - n: the device id
	links     []analysis.DeviceLinks // by position
	linked    []bool                 // by position: the analysis has a links row (nil: every position has)
	times     []analysis.DeviceTime  // by position (SpanNs 0 and no row: ran nothing)
	timed     []int32                // by position: its row in Breakdown.Devices, -1 for none
}

// Of points r at res, for a job its description says has described devices; it reports whether
// that changed anything.
func (r *DeviceRows) Of(res *analysis.Result, described int) bool {
	if r.res == res && r.described == described && res != nil {
		return false
	}
	r.res, r.described = res, described
	n := min(max(described, 0), maxDescribed)
	r.n, r.far = n, r.far[:0]
	if res != nil {
		for _, d := range res.Links.Devices {
			if int(d.Device) >= n && moved(&d) {
				r.far = append(r.far, d.Device)
			}
		}
		for _, t := range res.Breakdown.Devices {
			if int(t.Device) >= n {
				r.far = append(r.far, t.Device)
			}
		}
		slices.Sort(r.far)
		r.far = slices.Compact(r.far)
		if len(r.far) > 0 && int(r.far[len(r.far)-1]) >= max(described, 0) {
			// The ids are not the description's 0..N-1 (a trace's own device numbers): which of
			// those ran nothing is not known, and rows made up for them would be phantoms (the
			// report's rule).
			for d := range int32(n) {
				if r.seen(d) {
					r.far = append(r.far, d)
				}
			}
			slices.Sort(r.far)
			r.n = 0
		}
		// The ids that follow on from the job's are positions of their own ids still (a job with
		// no description: devices 0..N-1 that reported).
		k := 0
		for k < len(r.far) && r.far[k] == int32(r.n+k) {
			k++
		}
		r.n += k
		r.far = r.far[k:]
	}
	r.alignLinks()
	r.alignTimes()
	return true
}

// moved says whether a links row has figures of the device: bytes, or bytes of unknown size.
func moved(d *analysis.DeviceLinks) bool {
	return d.Total > 0 || d.Unattributed > 0 || len(d.LowerBound) > 0
}

// seen says whether the analysis has figures of device d (ids below the description's count).
func (r *DeviceRows) seen(d int32) bool {
	if ls := r.res.Links.Devices; int(d) < len(ls) && ls[d].Device == d && moved(&ls[d]) { // by id below analysis.MaxDevices
		return true
	}
	_, ok := slices.BinarySearchFunc(r.res.Breakdown.Devices, d, func(t analysis.DeviceTime, d int32) int { return cmp.Compare(t.Device, d) })
	return ok
}

// alignLinks puts the analysis's links rows by position: its own slice where its rows are the
// positions (every device has moved or marked something: the usual case, read with no copy).
func (r *DeviceRows) alignLinks() {
	var rows []analysis.DeviceLinks
	if r.res != nil {
		rows = r.res.Links.Devices
	}
	total := r.Len()
	aligned := len(rows) == total
	for p := 0; aligned && p < total; p++ {
		aligned = rows[p].Device == r.ID(p)
	}
	if aligned {
		r.links, r.linked = rows, nil
		return
	}
	r.links = make([]analysis.DeviceLinks, total)
	r.linked = make([]bool, total)
	for p := range r.links {
		r.links[p].Device = r.ID(p)
	}
	for _, d := range rows {
		if p, ok := r.Pos(d.Device); ok {
			r.links[p], r.linked[p] = d, true
		}
	}
}

// alignTimes puts the analysis's breakdown rows by position, as alignLinks the links.
func (r *DeviceRows) alignTimes() {
	var rows []analysis.DeviceTime
	if r.res != nil {
		rows = r.res.Breakdown.Devices
	}
	total := r.Len()
	r.timed = slices.Grow(r.timed[:0], total)[:total]
	for p := range r.timed {
		r.timed[p] = -1
	}
	for i, t := range rows {
		if p, ok := r.Pos(t.Device); ok {
			r.timed[p] = int32(i)
		}
	}
	aligned := len(rows) == total
	for p := 0; aligned && p < total; p++ {
		aligned = r.timed[p] == int32(p)
	}
	if aligned {
		r.times = rows
		return
	}
	r.times = make([]analysis.DeviceTime, total)
	for p := range r.times {
		if r.timed[p] >= 0 {
			r.times[p] = rows[r.timed[p]]
		} else {
			r.times[p].Device = r.ID(p)
		}
	}
}

// Len is how many devices there are.
func (r *DeviceRows) Len() int { return r.n + len(r.far) }

// Near is how many positions are their own device ids (0 to Near-1): the devices the run
// describes or that reported with small ids; the others follow them.
func (r *DeviceRows) Near() int { return r.n }

// ID is the device id at position p (0 <= p < Len).
func (r *DeviceRows) ID(p int) int32 {
	if p < r.n {
		return int32(p)
	}
	return r.far[p-r.n]
}

// Pos is device id's position; false for a device the job does not have.
func (r *DeviceRows) Pos(id int32) (int, bool) {
	if id < 0 {
		return 0, false
	}
	if int(id) < r.n {
		return int(id), true
	}
	i, ok := slices.BinarySearch(r.far, id)
	return r.n + i, ok
}

// Links is every device's links row, by position: a device the analysis has no row of yet has
// zeros (see Linked).
func (r *DeviceRows) Links() []analysis.DeviceLinks { return r.links }

// Linked says whether the analysis has a links row of the device at position p.
func (r *DeviceRows) Linked(p int) bool {
	return p >= 0 && p < r.Len() && (r.linked == nil || r.linked[p])
}

// Times is every device's time split, by position: a device that ran nothing yet has zeros
// (SpanNs 0; see Time).
func (r *DeviceRows) Times() []analysis.DeviceTime { return r.times }

// Time returns the time split of the device at position p; false when it ran nothing yet.
func (r *DeviceRows) Time(p int) (analysis.DeviceTime, bool) {
	if p < 0 || p >= r.Len() || r.timed[p] < 0 {
		return analysis.DeviceTime{}, false
	}
	return r.times[p], true
}
