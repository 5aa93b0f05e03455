package timeline

import (
	"reflect"
	"testing"
)

func kernel(dev int32, stream uint32, start, end, queued int64) Event {
	return Event{Kind: KindKernel, Device: dev, Stream: stream, Start: start, End: end, Queued: queued, Peer: NoDevice}
}

func wait(k Kind, dev int32, stream uint32, start, end int64) Event {
	return Event{Kind: k, Device: dev, Stream: stream, Start: start, End: end, Peer: NoDevice}
}

// The expected gaps below are worked out by hand from each timeline.
func TestIdleGaps(t *testing.T) {
	tests := []struct {
		name   string
		mode   IdleMode
		events []Event
		want   []Gap
	}{
		{
			name: "back to back is not idle",
			events: []Event{
				kernel(0, 1, 0, 100, 0),
				kernel(0, 1, 100, 200, 10),
			},
		},
		{
			// Op B was launched at 150, after A ended at 100: [100,150) host wait; the rest of the
			// gap up to 400 is longer than 30 ns, so other.
			name: "host wait then other",
			events: []Event{
				kernel(0, 1, 0, 100, 0),
				kernel(0, 1, 400, 500, 150),
			},
			want: []Gap{{0, 1, 100, 50, CauseHostWait}, {0, 1, 150, 250, CauseOther}},
		},
		{
			// An event wait [120,300) and a peer wait [300,350) inside the gap [100,400); B was
			// queued at 50. Uncovered [100,120) and [350,400) are other.
			name: "recorded waits win",
			events: []Event{
				kernel(0, 1, 0, 100, 0),
				wait(KindEventWait, 0, 1, 120, 300),
				wait(KindPeerWait, 0, 1, 300, 350),
				kernel(0, 1, 400, 500, 50),
			},
			want: []Gap{{0, 1, 100, 20, CauseOther}, {0, 1, 120, 180, CauseEventWait}, {0, 1, 300, 50, CausePeerWait}, {0, 1, 350, 50, CauseOther}},
		},
		{
			// A barrier wait [100,300) covers the start of the gap; the host then launched B at 320.
			// The gap (230 ns) is above the kernel-wait threshold, so the last 10 ns are other.
			name: "barrier then host",
			events: []Event{
				kernel(2, 7, 0, 100, 0),
				wait(KindBarrier, 2, 7, 100, 300),
				kernel(2, 7, 330, 400, 320),
			},
			want: []Gap{{2, 7, 100, 200, CauseBarrierWait}, {2, 7, 300, 20, CauseHostWait}, {2, 7, 320, 10, CauseOther}},
		},
		{
			// HTA classifies the whole gap: launch at 150 > previous end 100 → host wait for all 300.
			name: "hta whole gap host wait",
			mode: IdleHTA,
			events: []Event{
				kernel(0, 1, 0, 100, 0),
				wait(KindEventWait, 0, 1, 120, 300),
				kernel(0, 1, 400, 500, 150),
			},
			want: []Gap{{0, 1, 100, 300, CauseHostWait}},
		},
		{
			name: "hta kernel wait below 30ns",
			mode: IdleHTA,
			events: []Event{
				kernel(0, 1, 0, 100, 0),
				kernel(0, 1, 120, 200, 50),
				kernel(0, 1, 300, 400, 60),
			},
			want: []Gap{{0, 1, 100, 20, CauseKernelWait}, {0, 1, 200, 100, CauseOther}},
		},
		{
			name: "unknown launch time is never host wait",
			mode: IdleHTA,
			events: []Event{
				kernel(0, 1, 0, 100, -1),
				kernel(0, 1, 300, 400, -1),
			},
			want: []Gap{{0, 1, 100, 200, CauseOther}},
		},
		{
			// HTA keeps the negative interval of overlapping ops (kernel wait: below 30 ns).
			name: "hta overlapping ops",
			mode: IdleHTA,
			events: []Event{
				kernel(0, 1, 0, 100, 0),
				kernel(0, 1, 50, 200, 0),
				kernel(0, 1, 250, 300, 0),
			},
			want: []Gap{{0, 1, 100, -50, CauseKernelWait}, {0, 1, 200, 50, CauseOther}},
		},
		{
			// Overlapping ops on one stream (a group's parts) form one busy stretch.
			name: "overlapping ops merge",
			events: []Event{
				kernel(0, 1, 0, 100, 0),
				kernel(0, 1, 50, 200, 0),
				kernel(0, 1, 250, 300, 0),
			},
			want: []Gap{{0, 1, 200, 50, CauseOther}},
		},
		{
			name: "streams are separate",
			events: []Event{
				kernel(0, 1, 0, 100, 0),
				kernel(0, 2, 100, 200, 0),
				kernel(0, 1, 200, 300, 0),
			},
			want: []Gap{{0, 1, 100, 100, CauseOther}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := IdleGaps(tc.events, tc.mode, DefaultKernelWaitNs)
			if len(got) == 0 && len(tc.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("IdleGaps = %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// Device 0 runs a kernel [0,100) and an all-reduce [50,150), then a kernel [200,300) with a copy
// [220,260) under it: span 300, busy union [0,150)+[200,300) = 250, idle 50, compute union 200,
// non-compute 50; communication (NCCL only, as in HTA: the copy is memory, not communication)
// [50,150) = 100, of which [50,100) overlaps compute: overlap 50.
func TestBreakdown(t *testing.T) {
	events := []Event{
		kernel(0, 1, 0, 100, 0),
		{Kind: KindCollective, Sub: uint8(CollAllReduce), Device: 0, Stream: 2, Start: 50, End: 150},
		kernel(0, 1, 200, 300, 0),
		{Kind: KindMemcpy, Sub: uint8(CopyH2D), Device: 0, Stream: 3, Start: 220, End: 260},
		kernel(1, 3, 1000, 1010, 0),
		{Kind: KindBarrier, Device: 0, Stream: 1, Start: 150, End: 200},
	}
	got := Breakdown(events)
	want := []DeviceTime{
		{Device: 0, SpanNs: 300, IdleNs: 50, ComputeNs: 200, NonCompNs: 50, CommNs: 100, OverlapNs: 50, BusyNs: 250, FirstStart: 0},
		{Device: 1, SpanNs: 10, IdleNs: 0, ComputeNs: 10, NonCompNs: 0, CommNs: 0, OverlapNs: 0, BusyNs: 10, FirstStart: 1000},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Breakdown = %+v\nwant %+v", got, want)
	}
}

func TestPercentile(t *testing.T) {
	tests := []struct {
		vals []int64
		p    float64
		want int64
	}{
		{nil, 50, 0},
		{[]int64{5}, 99, 5},
		{[]int64{4, 1, 3, 2}, 50, 2},
		{[]int64{1, 2, 3, 4, 5}, 50, 3},
		{[]int64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}, 99, 100},
		{[]int64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}, 90, 90},
	}
	for _, tc := range tests {
		if got := Percentile(append([]int64(nil), tc.vals...), tc.p); got != tc.want {
			t.Errorf("Percentile(%v, %v) = %d; want %d", tc.vals, tc.p, got, tc.want)
		}
	}
}

func TestIntervals(t *testing.T) {
	a := Merge([]Interval{{5, 10}, {0, 3}, {2, 4}, {10, 12}})
	if want := []Interval{{0, 4}, {5, 12}}; !reflect.DeepEqual(a, want) {
		t.Errorf("Merge = %v; want %v", a, want)
	}
	if n := Length(a); n != 11 {
		t.Errorf("Length = %d; want 11", n)
	}
	b := Merge([]Interval{{3, 6}, {11, 20}})
	if n := IntersectLength(a, b); n != 1+1+1 {
		t.Errorf("IntersectLength = %d; want 3", n)
	}
}

func TestBusFactor(t *testing.T) {
	tests := []struct {
		op   CollOp
		n    int
		want float64
	}{
		{CollAllReduce, 8, 1.75},
		{CollAllGather, 8, 0.875},
		{CollReduceScatter, 4, 0.75},
		{CollAllToAll, 2, 0.5},
		{CollBroadcast, 8, 1},
		{CollAllReduce, 1, 0},
	}
	for _, tc := range tests {
		if got := tc.op.BusFactor(tc.n); got != tc.want {
			t.Errorf("%v.BusFactor(%d) = %v; want %v", tc.op, tc.n, got, tc.want)
		}
	}
}

func TestStrings(t *testing.T) {
	s := NewStrings()
	a, b := s.ID("ncclDevKernel_AllReduce"), s.ID("memcpy")
	if s.ID("ncclDevKernel_AllReduce") != a || a == b || s.ID("") != 0 {
		t.Error("interning is not stable")
	}
	if s.Lookup(b) != "memcpy" || s.Lookup(999) != "" {
		t.Error("lookup")
	}
}
