package analysis

import (
	"math/bits"
	"slices"

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
	r := round2(float64(bytes) / float64(ns))
	return &r
}

// opStats accumulates ops of one kind: how many, their bytes and busy time, and their durations.
type opStats struct {
	count, bytes, busyNs int64
	lat                  Quantiles
}

func (s *opStats) add(bytes, dur int64) {
	s.count++
	s.bytes += bytes
	s.busyNs += max(dur, 0)
	s.lat.Add(float64(max(dur, 0)))
}

// Stats is a group of ops: count, bytes and the time they took. GBps is bytes-weighted (total
// bytes / total time, GB/s = 10⁹ B/s), nil when unknown (no bytes or no time), never a median
// over ops of different sizes.
type Stats struct {
	Count  int64    `json:"count"`
	Bytes  int64    `json:"bytes"`
	BusyNs int64    `json:"busy_ns"`
	GBps   *float64 `json:"gbps"`
	P50Ns  *int64   `json:"time_ns_p50"`
	P99Ns  *int64   `json:"time_ns_p99"`
}

func (s *opStats) result() Stats {
	return Stats{Count: s.count, Bytes: s.bytes, BusyNs: s.busyNs, GBps: rate(s.bytes, s.busyNs),
		P50Ns: s.lat.quantileNs(50), P99Ns: s.lat.quantileNs(99)}
}

type sizeKey struct {
	kind  string
	class int64
}

// transfers folds copies, sends and receives by kind and by (kind, size class).
type transfers struct {
	byKind map[string]*opStats
	bySize map[sizeKey]*opStats
	// moved counts each transfer once: copies (not memsets) and sends; a receive is the same bytes.
	count, bytes int64
}

func newTransfers() *transfers {
	t := &transfers{byKind: map[string]*opStats{}, bySize: map[sizeKey]*opStats{}}
	for _, k := range timeline.TransferKinds {
		t.byKind[k] = &opStats{}
	}
	return t
}

func (t *transfers) add(e *timeline.Event) {
	switch e.Kind {
	case timeline.KindMemcpy, timeline.KindSend, timeline.KindRecv:
	default:
		return
	}
	if e.Status != timeline.StatusOK {
		return
	}
	name := e.OpName()
	ks := t.byKind[name]
	if ks == nil {
		ks = &opStats{}
		t.byKind[name] = ks
	}
	ks.add(e.Bytes, e.Dur())
	k := sizeKey{name, SizeClass(e.Bytes)}
	ss := t.bySize[k]
	if ss == nil {
		ss = &opStats{}
		t.bySize[k] = ss
	}
	ss.add(e.Bytes, e.Dur())
	if e.Kind == timeline.KindSend || (e.Kind == timeline.KindMemcpy && timeline.CopyDir(e.Sub) != timeline.CopySet) {
		t.count++
		t.bytes += e.Bytes
	}
}

// SizeRow is the transfers of one kind in one size class (sizes up to SizeClass bytes).
type SizeRow struct {
	Kind      string `json:"kind"`
	SizeClass int64  `json:"size_class"`
	Stats
}

// Transfers are copies and point-to-point transfers. Count and Bytes count each transfer once
// (copies other than memsets, and sends; a receive carries the bytes its send did).
type Transfers struct {
	Count  int64            `json:"count"`
	Bytes  int64            `json:"bytes"`
	ByKind map[string]Stats `json:"by_kind"`
	BySize []SizeRow        `json:"by_size"`
}

func (t *transfers) result() Transfers {
	out := Transfers{Count: t.count, Bytes: t.bytes, ByKind: map[string]Stats{}, BySize: []SizeRow{}}
	for k, s := range t.byKind {
		out.ByKind[k] = s.result()
	}
	for k, s := range t.bySize {
		out.BySize = append(out.BySize, SizeRow{Kind: k.kind, SizeClass: k.class, Stats: s.result()})
	}
	slices.SortFunc(out.BySize, func(a, b SizeRow) int {
		if a.Kind != b.Kind {
			return kindOrder(a.Kind) - kindOrder(b.Kind)
		}
		return cmpInt(a.SizeClass, b.SizeClass)
	})
	return out
}

func kindOrder(k string) int {
	if i := slices.Index(timeline.TransferKinds, k); i >= 0 {
		return i
	}
	return len(timeline.TransferKinds)
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
