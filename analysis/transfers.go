package analysis

import (
	"encoding/json"
	"math"
	"math/bits"

	"github.com/xfertop/xfertop/timeline"
)

// SizeClass rounds a byte count up to a power of two: the size classes transfers are grouped by.
func SizeClass(n int64) int64 {
	if n <= 1 {
		return max(n, 0)
	}
	if n > 1<<62 {
		return 1 << 62
	}
	return 1 << bits.Len64(uint64(n-1))
}

// rate is bytes per nanosecond (= GB/s), nil (unknown) without bytes or time.
func rate(bytes, ns int64) *float64 {
	if bytes <= 0 || ns <= 0 {
		return nil
	}
	r := roundRate(float64(bytes) / float64(ns))
	return &r
}

// roundRate rounds a rate to two decimals, or, below 1, to three significant digits: a 4 KiB
// collective's 0.00412 GB/s rounded to two decimals read 0, a rate that was not 0.
func roundRate(x float64) float64 {
	if a := math.Abs(x); a >= 1 || a == 0 {
		return round2(x)
	}
	scale := math.Pow(10, 2-math.Floor(math.Log10(math.Abs(x))))
	return math.Round(x*scale) / scale
}

// opStats accumulates ops of one kind: how many, their bytes and busy time, and their durations.
// An op of unknown size (Bytes 0: the source did not record it, or recorded a value out of range)
// counts and its time is busy time, but it is left out of the rate: its bytes are not 0, and
// dividing the known bytes by its time too would pull the rate down. knownNs is the busy time of
// the ops whose size is known, the rate's denominator. An emulated op (timeline.AuxEmulated)
// counts, with its bytes and time, but is left out of the rate too: it crossed none of the
// topology's links. emuBytes and emuNs are the emulated sends' own (the copies that stood in).
//
// An op of unknown time (timeline.AuxTimeUnknown: durUnknown) counts, with its bytes, in
// unknownTime and in nothing timed: busy time, rates, percentiles.
type opStats struct {
	count, bytes, busyNs int64
	unknown, knownNs     int64
	unknownTime          int64
	rated                int64 // ops in the rate: known size and time, not emulated
	rateBytes            int64 // of bytes, those of the ops the rate covers (known size, not emulated)
	emulated             int64
	emuBytes, emuNs      int64
	lat                  Quantiles
}

// emuNone, emuRate and emuNoRate say how an op was emulated: not at all, as a send whose copy
// stood in for the transfer (its rate is the copy's), or as a receive that only waited for that
// copy (no rate of its own).
const (
	emuNone = iota
	emuRate
	emuNoRate
)

// durUnknown is the duration add takes for an op whose time its source does not know.
const durUnknown = math.MinInt64

// opDur is an op's duration for opStats.add: durUnknown for one of unknown time.
func opDur(e *timeline.Event) int64 {
	if e.TimeUnknown() {
		return durUnknown
	}
	return e.Dur()
}

func (s *opStats) add(bytes, dur int64, emu int) {
	s.count++
	if bytes <= 0 {
		s.unknown++
	} else {
		s.bytes += bytes
	}
	if dur == durUnknown {
		s.unknownTime++
		if emu != emuNone {
			s.emulated++
		}
		return
	}
	dur = max(dur, 0)
	s.busyNs += dur
	switch {
	case emu != emuNone:
		s.emulated++
		if emu == emuRate && bytes > 0 {
			s.emuBytes += bytes
			s.emuNs += dur
		}
	case bytes > 0:
		s.rateBytes += bytes
		s.knownNs += dur
		s.rated++
	}
	s.lat.Add(float64(dur))
}

// Stats is a group of ops: count, bytes and the time they took. GBps is bytes-weighted (total
// bytes / total time, GB/s = 10⁹ B/s), nil when unknown (no bytes or no time), never a median
// over ops of different sizes.
//
// UnknownSize of the Count ops are of unknown size: they are left out of GBps (its bytes and its
// time are the other ops'), and Bytes holds only the others' bytes, a lower bound; when every op
// is of unknown size, Bytes is unknown (0 here, null in JSON).
//
// UnknownTime of the Count ops are of unknown time (timeline.AuxTimeUnknown: a Flight Recorder
// entry not retired, without duration_ms): they are in Count and Bytes but in no time figure
// (BusyNs, GBps, the percentiles); when every op's time is unknown, BusyNs is unknown too (0 here,
// null in JSON) and the rate and percentiles nil.
//
// A source's timestamps have a resolution (a Kineto trace's are whole µs): each op's measured
// duration is within one tick of the true one, so the group's time is within Count ticks of
// BusyNs. When that is more than 1% of it (the ops last under 100 ticks on average), GBps is
// unknown (nil) and GBpsMin and GBpsMax bound the rate instead (GBpsMax nil: no upper bound, the
// ops may have taken no time at all): a 4 MiB memset that took "4 µs" moved 1049 GB/s only to
// within 839–1398 GB/s, and a bare 1049 GB/s is above a V100's HBM2 peak.
type Stats struct {
	Count       int64    `json:"count"`
	Bytes       int64    `json:"bytes"`
	UnknownSize int64    `json:"unknown_size"`
	UnknownTime int64    `json:"unknown_time"`
	BusyNs      int64    `json:"busy_ns"`
	GBps        *float64 `json:"gbps"`
	P50Ns       *int64   `json:"time_ns_p50"`
	P99Ns       *int64   `json:"time_ns_p99"`
	// GBpsMin and GBpsMax bound the rate when the timestamps' resolution leaves it uncertain
	// (GBps nil); absent otherwise.
	GBpsMin *float64 `json:"gbps_min,omitempty"`
	GBpsMax *float64 `json:"gbps_max,omitempty"`
	// Emulated of the Count ops stood in for the topology's transfers (timeline.AuxEmulated: the
	// cuda backend's --fit with ranks sharing a GPU, a send carried by a copy on the GPU and its
	// receive waiting for that copy). They are in Count, Bytes and BusyNs but not in GBps, which
	// covers only the transfers the topology's links carried (nil when all were emulated).
	// EmulatedGBps is the emulated sends' own rate, their copies' (bytes / time: an on-GPU copy
	// runs at memory speed, not a link's); nil for receives, which moved nothing themselves (the
	// send's copy did): a receive's time is its stream's wait on the GPU for that copy to land,
	// from the copy's start or, if its stream got there later, from then (the data then partly or
	// wholly there already).
	Emulated     int64    `json:"emulated"`
	EmulatedGBps *float64 `json:"emulated_gbps"`
}

// statsJSON is Stats as written: Bytes null when no op's size is known.
type statsJSON struct {
	Count       int64    `json:"count"`
	Bytes       *int64   `json:"bytes"`
	UnknownSize int64    `json:"unknown_size"`
	UnknownTime int64    `json:"unknown_time"`
	BusyNs      *int64   `json:"busy_ns"`
	GBps        *float64 `json:"gbps"`
	P50Ns       *int64   `json:"time_ns_p50"`
	P99Ns       *int64   `json:"time_ns_p99"`
	GBpsMin     *float64 `json:"gbps_min,omitempty"`
	GBpsMax     *float64 `json:"gbps_max,omitempty"`
	Emulated    int64    `json:"emulated"`
	EmuGBps     *float64 `json:"emulated_gbps"`
}

// BytesKnown reports whether Bytes is a figure (some op's size is known, or there is no op).
func (s Stats) BytesKnown() bool { return s.Count == 0 || s.UnknownSize < s.Count }

// TimeKnown reports whether BusyNs is a figure (some op's time is known, or there is no op).
func (s Stats) TimeKnown() bool { return s.Count == 0 || s.UnknownTime < s.Count }

func (s Stats) toJSON() statsJSON {
	j := statsJSON{Count: s.Count, UnknownSize: s.UnknownSize, UnknownTime: s.UnknownTime, GBps: s.GBps,
		P50Ns: s.P50Ns, P99Ns: s.P99Ns, GBpsMin: s.GBpsMin, GBpsMax: s.GBpsMax, Emulated: s.Emulated, EmuGBps: s.EmulatedGBps}
	if s.BytesKnown() {
		j.Bytes = &s.Bytes
	}
	if s.TimeKnown() {
		j.BusyNs = &s.BusyNs
	}
	return j
}

// MarshalJSON writes the group with null bytes when no op's size is known, and null busy_ns when
// no op's time is. A null reads back as 0 (with UnknownSize, or UnknownTime, == Count: unknown
// again).
func (s Stats) MarshalJSON() ([]byte, error) { return json.Marshal(s.toJSON()) }

// MinTicks is the mean duration, in ticks of the timestamps' resolution, under which a group's
// rate is given as a range: each duration is known to ±1 tick, so 100 ticks is ±1%.
const MinTicks = 100

// minTickNs is the coarsest resolution taken for a clock's ns: below 1 µs, a common divisor of the
// timestamps is more likely round numbers (a hand-built timeline) than a clock's tick, and the
// traces that round (Kineto's, Chrome's) round to whole µs.
const minTickNs = 1000

// result is the group's figures, its rate bounded when ticks (the timestamps' resolution, ns)
// leave it uncertain.
func (s *opStats) result(tick int64) Stats {
	out := Stats{Count: s.count, Bytes: s.bytes, UnknownSize: s.unknown, UnknownTime: s.unknownTime, BusyNs: s.busyNs, GBps: rate(s.rateBytes, s.knownNs),
		P50Ns: s.lat.quantileNs(50), P99Ns: s.lat.quantileNs(99), Emulated: s.emulated, EmulatedGBps: rate(s.emuBytes, s.emuNs)}
	if known := s.rated; tick >= minTickNs && s.rateBytes > 0 && s.knownNs < MinTicks*known*tick {
		slack := known * tick
		out.GBps = nil
		out.GBpsMin = rate(s.rateBytes, s.knownNs+slack)
		out.GBpsMax = rate(s.rateBytes, s.knownNs-slack) // nil when the ops may have taken no time
	}
	if implausible(out.EmulatedGBps) {
		out.EmulatedGBps = nil
	}
	if implausible(out.GBps) || implausible(out.GBpsMin) {
		// Faster than anything moves data, even at the bound: broken records (a 1 GB copy that
		// took no time), so the rate is unknown, not a figure above every link.
		out.GBps, out.GBpsMin, out.GBpsMax = nil, nil, nil
	}
	return out
}

// implausible reports whether a rate is above timeline.MaxRateGBps.
func implausible(gbps *float64) bool { return gbps != nil && *gbps > timeline.MaxRateGBps }

// numKinds is the number of transfer kinds with a fixed slot: timeline.TransferKinds.
const numKinds = 7

// numClasses is the number of size classes: 0, 1, then 2^1 … 2^63.
const numClasses = 65

// kindIndex is an event's slot in timeline.TransferKinds, or -1 for a copy of unknown direction.
func kindIndex(e *timeline.Event) int {
	switch e.Kind {
	case timeline.KindSend:
		return 5
	case timeline.KindRecv:
		return 6
	}
	if d := int(e.Sub); d >= 1 && d <= 5 { // h2d, d2h, d2d, p2p, memset: TransferKinds' order
		return d - 1
	}
	return -1
}

// classIndex is the slot of SizeClass(n).
func classIndex(n int64) int {
	switch {
	case n <= 0:
		return 0
	case n == 1:
		return 1
	case n > 1<<62:
		return numClasses - 1
	}
	return bits.Len64(uint64(n-1)) + 1
}

// transfers folds copies, sends and receives by kind and by (kind, size class), in fixed slots so
// that an event costs no map lookup.
type transfers struct {
	byKind [numKinds]opStats
	bySize [numKinds][numClasses]*opStats
	// odd holds copies of a direction xfertop does not know, by name.
	odd map[string]*opStats
	// count and bytes count each transfer once: copies (not memsets) and sends; a receive is the
	// same bytes as its send.
	count, bytes int64
	unknown      int64 // of count, the transfers of unknown size
	// tick is the timestamps' resolution as the busy ops show it: the greatest common divisor of
	// their starts and ends (1000 for a trace in whole µs, 1 for the engine's ns); 0 before any.
	tick int64
}

// gcd is the greatest common divisor of |a| and |b|.
func gcd(a, b int64) int64 {
	a, b = max(a, -a), max(b, -b)
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func newTransfers() *transfers { return &transfers{odd: map[string]*opStats{}} }

func (t *transfers) add(e *timeline.Event) {
	// The clock's resolution, from every busy op: rates of ops a few ticks long are ranges.
	if e.Kind.IsBusy() && t.tick != 1 && !e.TimeUnknown() {
		t.tick = gcd(gcd(t.tick, e.Start), e.End)
	}
	// The kinds it folds are tested here, small enough to inline into Analyzer.Emit: most events
	// are of other kinds, and a call per accumulator per event was a tenth of the analysis.
	if e.Kind == timeline.KindMemcpy || e.Kind == timeline.KindSend || e.Kind == timeline.KindRecv {
		t.fold(e)
	}
}

func (t *transfers) fold(e *timeline.Event) {
	if e.Status != timeline.StatusOK {
		return
	}
	k := kindIndex(e)
	if k < 0 {
		name := e.OpName()
		if t.odd[name] == nil {
			t.odd[name] = &opStats{}
		}
		t.odd[name].add(e.Bytes, opDur(e), emuNone)
		return
	}
	emu := emuNone
	if e.Emulated() {
		emu = emuRate
		if e.Kind == timeline.KindRecv {
			emu = emuNoRate
		}
	}
	t.byKind[k].add(e.Bytes, opDur(e), emu)
	c := classIndex(e.Bytes)
	ss := t.bySize[k][c]
	if ss == nil {
		ss = &opStats{}
		t.bySize[k][c] = ss
	}
	ss.add(e.Bytes, opDur(e), emu)
	if e.Kind == timeline.KindSend || (e.Kind == timeline.KindMemcpy && timeline.CopyDir(e.Sub) != timeline.CopySet) {
		t.count++
		t.bytes += max(e.Bytes, 0)
		if e.Bytes <= 0 {
			t.unknown++
		}
	}
}

// SizeRow is the transfers of one kind in one size class (sizes up to SizeClass bytes). SizeClass
// 0 is the ops of unknown size (null in JSON).
type SizeRow struct {
	Kind      string `json:"kind"`
	SizeClass int64  `json:"size_class"`
	Stats
}

// MarshalJSON writes the row flat, as the embedded Stats's own MarshalJSON would otherwise hide
// Kind and SizeClass, with null for a size class that is unknown.
func (r SizeRow) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Kind      string `json:"kind"`
		SizeClass *int64 `json:"size_class"`
		statsJSON
	}{r.Kind, known(r.SizeClass), r.Stats.toJSON()})
}

// Transfers are copies and point-to-point transfers. Count and Bytes count each transfer once
// (copies other than memsets, and sends; a receive carries the bytes its send did). UnknownSize
// of the Count are of unknown size: Bytes is then a lower bound.
type Transfers struct {
	Count       int64            `json:"count"`
	Bytes       int64            `json:"bytes"`
	UnknownSize int64            `json:"unknown_size"`
	ByKind      map[string]Stats `json:"by_kind"`
	BySize      []SizeRow        `json:"by_size"`
}

func (t *transfers) result() Transfers {
	out := Transfers{Count: t.count, Bytes: t.bytes, UnknownSize: t.unknown, ByKind: map[string]Stats{}, BySize: []SizeRow{}}
	for k, name := range timeline.TransferKinds {
		out.ByKind[name] = t.byKind[k].result(t.tick)
		for c, s := range t.bySize[k] {
			if s != nil {
				class := int64(c) // classes 0 and 1
				if c > 1 {
					class = 1 << (c - 1)
				}
				out.BySize = append(out.BySize, SizeRow{Kind: name, SizeClass: class, Stats: s.result(t.tick)})
			}
		}
	}
	for name, s := range t.odd {
		out.ByKind[name] = s.result(t.tick)
	}
	return out
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
