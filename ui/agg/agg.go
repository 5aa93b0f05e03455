// Package agg keeps what the console draws that is not a number: each stream's recent activity for
// the timeline and a log of recent events. It reads a session's events as they arrive (each Update
// reads only events it has not seen, and hands each to the analysis, which computes every number)
// and is bounded (old stream activity is dropped with the window).
package agg

import (
	"cmp"
	"slices"
	"sort"

	"github.com/xfertop/xfertop/timeline"
)

// Op is one item on a stream's timeline.
type Op struct {
	Start, End int64
	Index      int64 // global event index, to fetch details from the snapshot
	Kind       timeline.Kind
	Sub        uint8
	Captured   bool // replayed by a CUDA graph (timeline.Event.Captured)
	// TimeUnknown: its source does not know when it ran or for how long
	// (timeline.Event.TimeUnknown); Start is its creation, End a placeholder.
	TimeUnknown bool
}

// Track is one stream's recent activity, ordered by start.
type Track struct {
	Device   int32
	Stream   uint32
	Priority int8
	Ops      []Op
	// shared is how many of Ops a published copy may read: Ops[:shared] is never written again
	// (an op inserted among them copies the slice first); pub is that copy while still current.
	shared int
	pub    *Track
	// dropped is how many ops the window no longer holds are kept in Ops' array before Ops[0].
	dropped int
}

// MaxLog is how many recent events the log keeps.
const MaxLog = 5000

// State is the console's display state. One goroutine Updates it; Publish gives read-only copies
// other goroutines may draw from while Update goes on.
type State struct {
	Next   int64 // global index of the next event to read
	Missed int64 // events trimmed from the window before they were read
	Now    int64
	Events int64
	Tracks []*Track // sorted by device, then stream, once Update returns
	// byDev holds each device's tracks by its id (up to maxIndexedDevice; others are in trackIdx):
	// a device has a few streams, found by looking at each, where a map lookup per event was a
	// third of an event's cost here at 4,096 GPUs (8,192 streams outgrew a cache of recent tracks).
	byDev    [][]*Track
	trackIdx map[[2]int64]*Track
	unsorted bool    // a track was added to Tracks since they were last sorted
	Log      []int64 // recent event indices (ring, newest at Log[(logHead-1)%len])
	logHead  int
}

// New returns an empty state.
func New() *State {
	return &State{trackIdx: map[[2]int64]*Track{}, Log: make([]int64, 0, MaxLog)}
}

// Update reads the events of snap that are new since the last call, handing each to fold too.
func (s *State) Update(snap *timeline.Snapshot, fold func(*timeline.Event)) {
	if s.Next < snap.Base {
		s.Missed += snap.Base - s.Next
		s.Next = snap.Base
	}
	s.Now = max(s.Now, snap.Now)
	if snap.Total-s.Next >= reserveBatch {
		s.reserve(snap)
	}
	for i := s.Next; i < snap.Total; i++ {
		e := snap.At(i)
		s.add(i, e)
		if fold != nil {
			fold(e)
		}
	}
	s.Next = snap.Total
	if s.unsorted {
		// New streams are sorted in once an update, not each as it comes: on a job of 32,768
		// streams, keeping the order at each new one cost the fold of a window 10 s.
		slices.SortFunc(s.Tracks, func(a, b *Track) int {
			return cmp.Or(cmp.Compare(a.Device, b.Device), cmp.Compare(a.Stream, b.Stream))
		})
		s.unsorted = false
	}
	// Drop stream activity the window no longer holds. The live ops are sliced off the dropped
	// ones, and move into a new array only once the dropped ones held in front of them reach half
	// the live ones: moving them at every update (a sliding window drops a few at each
	// of every stream's) copied the whole window's ops each fold, a sixth of a listening console's
	// CPU; slicing alone would keep the dropped ops' memory until the next reallocation.
	for _, t := range s.Tracks {
		if len(t.Ops) == 0 || t.Ops[0].Index >= snap.Base {
			continue // nothing of it dropped (most streams, at most updates): no search
		}
		k := sort.Search(len(t.Ops), func(j int) bool { return t.Ops[j].Index >= snap.Base })
		t.pub = nil
		live := len(t.Ops) - k
		if t.dropped += k; 2*t.dropped <= live {
			t.Ops, t.shared = t.Ops[k:], max(0, t.shared-k)
			continue
		}
		// A published copy may read Ops[:shared] of the old array: the new one leaves it alone.
		t.Ops, t.shared, t.dropped = append(make([]Op, 0, cap(t.Ops)-k+t.dropped), t.Ops[k:]...), 0, 0
	}
}

// reserveBatch is the batch from which Update first counts each stream's new ops and grows its
// track once: opening a recording folds a million events at once, and growing by appending copied
// every track's ops about twice over (a fifth of the fold's time).
const reserveBatch = 1 << 16

// reserve grows each track by the number of ops snap's unread events will add to it.
func (s *State) reserve(snap *timeline.Snapshot) {
	counts := map[*Track]int{}
	for i := s.Next; i < snap.Total; i++ {
		if e := snap.At(i); e.OnStream() {
			counts[s.track(e)]++
		}
	}
	for t, n := range counts {
		if cap(t.Ops)-len(t.Ops) >= n {
			continue
		}
		// A published copy may read Ops[:shared]: a new array leaves it alone, as appending would.
		grown := make([]Op, len(t.Ops), len(t.Ops)+n)
		copy(grown, t.Ops)
		t.Ops, t.shared, t.pub, t.dropped = grown, 0, nil, 0
	}
}

// Publish returns a copy of the state that later Updates do not change, for another goroutine to
// draw from: it copies the log and each track's header, not the ops (a track's published ops are
// never written again), and reuses a track's copy while the track has not changed.
func (s *State) Publish() *State {
	p := &State{Next: s.Next, Missed: s.Missed, Now: s.Now, Events: s.Events, Tracks: make([]*Track, len(s.Tracks)),
		Log: s.RecentLog(MaxLog)}
	for i, t := range s.Tracks {
		if t.pub == nil {
			t.shared = len(t.Ops)
			t.pub = &Track{Device: t.Device, Stream: t.Stream, Priority: t.Priority, Ops: t.Ops[:t.shared:t.shared]}
		}
		p.Tracks[i] = t.pub
	}
	return p
}

// maxIndexedDevice bounds the device ids whose tracks byDev holds: a slot per id up to the
// largest seen, 24 bytes each.
const maxIndexedDevice = 1 << 17

func (s *State) track(e *timeline.Event) *Track {
	d := int(e.Device)
	if d >= 0 && d < len(s.byDev) {
		for _, t := range s.byDev[d] {
			if t.Stream == e.Stream {
				return t
			}
		}
	}
	k := [2]int64{int64(e.Device), int64(e.Stream)}
	if t, ok := s.trackIdx[k]; ok {
		return t
	}
	t := &Track{Device: e.Device, Stream: e.Stream, Priority: e.Priority}
	if d >= 0 && d < maxIndexedDevice {
		if d >= len(s.byDev) {
			s.byDev = append(s.byDev, make([][]*Track, d+1-len(s.byDev))...)
		}
		s.byDev[d] = append(s.byDev[d], t)
	} else {
		s.trackIdx[k] = t
	}
	s.Tracks = append(s.Tracks, t)
	s.unsorted = true
	return t
}

func (s *State) add(idx int64, e *timeline.Event) {
	s.Events++
	switch {
	case e.Kind == timeline.KindLinkBytes:
		// A measurement of a link, every 50 ms per link in use: the overview shows it, and the log
		// keeps its room for what happened.
	case len(s.Log) < MaxLog:
		s.Log = append(s.Log, idx)
	default:
		s.Log[s.logHead] = idx
		s.logHead = (s.logHead + 1) % MaxLog
	}
	if e.OnStream() {
		t := s.track(e)
		op := Op{Start: e.Start, End: e.End, Index: idx, Kind: e.Kind, Sub: e.Sub, Captured: e.Captured(), TimeUnknown: e.TimeUnknown()}
		j := len(t.Ops)
		for j > 0 && t.Ops[j-1].Start > op.Start {
			j--
		}
		if j < t.shared {
			// Out of start order among ops a published copy reads: write into a copy of them.
			t.Ops, t.shared, t.dropped = append(make([]Op, 0, 2*len(t.Ops)+1), t.Ops...), 0, 0
		}
		t.pub = nil
		j = len(t.Ops)
		t.Ops = append(t.Ops, op)
		for j > 0 && t.Ops[j-1].Start > op.Start {
			t.Ops[j] = t.Ops[j-1]
			j--
		}
		t.Ops[j] = op
	}
}

// RecentLog returns up to n recent event indices, oldest first.
func (s *State) RecentLog(n int) []int64 {
	out := make([]int64, 0, min(n, len(s.Log)))
	for k := len(s.Log) - min(n, len(s.Log)); k < len(s.Log); k++ {
		out = append(out, s.Log[(s.logHead+k)%len(s.Log)])
	}
	return out
}
