package receiver

import (
	"fmt"
	"time"

	"github.com/xfertop/xfertop/units"
)

// Bounds on what a sender's span may say. A sender is not trusted: a span outside them is left out
// of the merged stream, counted (Stats.Invalid) and logged, so that no sender can push a total of
// the analysis past what int64 holds or make it say something absurd (a duration of centuries, a
// negative idle time, 2^63 lost events). They follow the trace importers' (importers).
const (
	// MaxEventSpan is the longest event taken: 24 h, as the importers allow.
	MaxEventSpan = 24 * time.Hour
	// MaxSkew is how far a span may start before its sender's epoch, or end after the epoch plus
	// the time the sender has been sending; and how far a sender's epoch may lie from the first
	// sender's, beyond the time since the first came. Senders' clocks agree far better than that,
	// and a job's events lie within it of each other.
	MaxSkew = 24 * time.Hour
	// maxEventBytes bounds one event's bytes (more than any device holds); maxTotalBytes all the
	// senders' together, so that sums stay in int64 even counted twice (sender and receiver).
	maxEventBytes = 1 << 40
	maxTotalBytes = 1 << 60
	// seqSlack is how far a sender's numbering may run ahead of one event per nanosecond of its
	// own time since its epoch: a burst of instants at one time, say. A sequence number past it
	// cannot be the sender's, and taking it would count everything before it as lost.
	seqSlack = 1 << 20
)

// minWallNs is the earliest span time taken: a wall-clock time before 2000 is no sender's clock
// (a span time of 0, say, is OTLP's "unset").
var minWallNs = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

// plausibleWall says whether ns can be a sender's wall-clock time when the receiver's clock reads now.
func plausibleWall(ns int64, now time.Time) bool {
	return ns >= minWallNs && ns <= now.Add(MaxSkew).UnixNano()
}

// check says why sp cannot be its session's ("" when it can). Times are still wall-clock ns here.
func (m *Merger) check(s *session, sp *Span, now time.Time) string {
	if s.refuse != "" {
		return s.refuse
	}
	e := &sp.Event
	switch {
	case e.Start < minWallNs || e.End < minWallNs:
		return fmt.Sprintf("start %d or end %d ns is not a wall-clock time after 2000", uint64(e.Start), uint64(e.End))
	case e.End < e.Start:
		return fmt.Sprintf("it ends %s before it starts", units.Dur(e.Start-e.End))
	case e.End-e.Start > int64(MaxEventSpan):
		return fmt.Sprintf("it lasts %s, longer than %s", units.Dur(e.End-e.Start), units.Dur(int64(MaxEventSpan)))
	case e.Start < s.epoch-int64(MaxSkew):
		return fmt.Sprintf("it starts %s before its sender's epoch", units.Dur(s.epoch-e.Start))
	}
	if ahead := e.End - s.epoch; ahead > int64(MaxSkew)+max(0, int64(now.Sub(s.firstSeen))) {
		return fmt.Sprintf("it ends %s after its sender's epoch, more than %s past the time the sender has been sending", units.Dur(ahead), units.Dur(int64(MaxSkew)))
	}
	if q := e.Queued; q != 0 && (q < e.Start-s.epoch-int64(MaxEventSpan) || q > e.End-s.epoch) {
		return fmt.Sprintf("xfertop.queued_ns %d is not within %s before the span", q, units.Dur(int64(MaxEventSpan)))
	}
	if e.Bytes < 0 || e.Bytes > maxEventBytes {
		return fmt.Sprintf("xfertop.bytes %d is not the size of one transfer (0 to 2^40)", e.Bytes)
	}
	if m.bytes+e.Bytes > maxTotalBytes {
		return "the senders' bytes together pass 2^60"
	}
	if s.full && sp.Seq >= 0 {
		if limit := max(0, e.End-s.epoch) + seqSlack; sp.Seq > limit {
			return fmt.Sprintf("xfertop.seq %d is past what its sender can have numbered %s after its epoch (%d)", sp.Seq, units.Dur(max(0, e.End-s.epoch)), limit)
		}
	}
	return ""
}

// refuseSession says why a new session's spans cannot be merged with the first sender's ("" when
// they can): its epoch lies further from the axis than the time since the first sender came, plus
// MaxSkew.
func (m *Merger) refuseSession(s *session, now time.Time) string {
	d := s.epoch - m.axis
	if d < 0 {
		d = -d
	}
	if d > int64(MaxSkew)+max(0, int64(now.Sub(m.axisSeen))) {
		return fmt.Sprintf("its epoch lies %s from the first sender's", units.Dur(d))
	}
	return ""
}

// invalid counts and logs a span left out.
func (m *Merger) invalid(s *session, host, why string) {
	m.stats.invalid++
	if m.logf != nil {
		m.logf("invalid", "left out a span from %s (session %s): %s", host, s.id, why)
	}
}

// satAdd is a+b, held at the int64 maximum instead of wrapping.
func satAdd(a, b int64) int64 {
	if b > 0 && a > 1<<63-1-b {
		return 1<<63 - 1
	}
	return a + b
}
