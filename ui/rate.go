package ui

import (
	"strconv"
	"time"

	"github.com/xfertop/xfertop/units"
)

// Over how much wall-clock time the achieved rate is measured, and the least that gives one.
const (
	rateSpan = 3 * time.Second
	rateMin  = time.Second
	// rateBehind is how far under the speed asked for a run must be to be said to lag: a frame's
	// jitter is not.
	rateBehind = 0.9
)

// rate is the simulated time a live source achieves per wall-clock second, over its last few
// seconds of frames: a large job's simulation may run far below the speed asked for (speed 1×,
// running at 0.12×), and the header says so.
type rate struct {
	samples []rateSample
	speed   float64
	gen     uint64
}

type rateSample struct {
	wall time.Time
	sim  int64
}

// add notes a frame's time: a new speed, generation or a clock that went back starts over.
func (r *rate) add(wall time.Time, sim int64, speed float64, gen uint64) {
	if n := len(r.samples); speed != r.speed || gen != r.gen || (n > 0 && (sim < r.samples[n-1].sim || wall.Before(r.samples[n-1].wall))) {
		r.samples, r.speed, r.gen = r.samples[:0], speed, gen
	}
	r.samples = append(r.samples, rateSample{wall: wall, sim: sim})
	k := 0
	for k < len(r.samples)-2 && !r.samples[k+1].wall.After(wall.Add(-rateSpan)) {
		k++
	}
	r.samples = append(r.samples[:0], r.samples[k:]...)
}

// achieved returns the simulated seconds per wall-clock second, false until a second of frames
// was seen.
func (r *rate) achieved() (float64, bool) {
	if len(r.samples) < 2 {
		return 0, false
	}
	a, b := r.samples[0], r.samples[len(r.samples)-1]
	dt := b.wall.Sub(a.wall)
	if dt < rateMin {
		return 0, false
	}
	return float64(b.sim-a.sim) / float64(dt.Nanoseconds()), true
}

// speedText is the header's speed: the speed asked for, and, when a live run falls behind it,
// the rate it achieves ("1× (running at 0.12×)").
func (m *Model) speedText() string {
	if m.status.Speed <= 0 {
		return "max"
	}
	s := strconv.FormatFloat(m.status.Speed, 'g', -1, 64) + "×"
	if m.info.Replay && m.status.Import == nil || m.status.Done || m.status.Err != nil || m.paused {
		return s
	}
	if a, ok := m.rate.achieved(); ok && a < rateBehind*m.status.Speed {
		s += " (" + achievedText(a) + ")"
	}
	return s
}

// achievedText says how fast a run behind its speed goes: as a factor while it is one a person
// reads (0.12×, 0.014×), below a hundredth as simulated time per second of wall clock (a 4,096-GPU
// run's 2.9 µs/s; its factor, 2.9e-06×, reads as a formula), and a run whose clock did not move
// in the frames measured says that rather than "0×", which reads as stopped.
func achievedText(a float64) string {
	switch {
	case a >= 0.1:
		return "running at " + strconv.FormatFloat(a, 'f', 2, 64) + "×"
	case a >= 0.01:
		return "running at " + strconv.FormatFloat(a, 'f', 3, 64) + "×"
	case a*1e9 >= 1:
		return "running at " + units.Dur(int64(a*1e9)) + " simulated per second"
	}
	return "simulated time not advancing"
}
