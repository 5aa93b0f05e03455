package timeline

import "time"

// Pace ties a session's time to the wall clock: it was At at wall time Wall and moves on at Speed
// session seconds per wall second. A paced simulation, a replay and the readers of what either has
// under way place themselves on the session's time line through it.
type Pace struct {
	Wall  time.Time
	At    int64
	Speed float64 // 0 or less: the position stays at At
}

// Position is where the session is at wall time now.
func (p Pace) Position(now time.Time) int64 {
	if p.Speed <= 0 {
		return p.At
	}
	return p.At + int64(float64(now.Sub(p.Wall))*p.Speed)
}

// WallAt is when the session reaches time t, for a pace that moves (Speed > 0).
func (p Pace) WallAt(t int64) time.Time {
	return p.Wall.Add(time.Duration(float64(t-p.At) / p.Speed))
}
