package session

import (
	"cmp"
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/session/manualclock"
	"github.com/xfertop/xfertop/timeline"
)

// longOps are a run with ops much longer than the rest, as a recording holds them: device 0's
// stream 1 runs a 1 s all-reduce from 1 ms, device 1's stream 2 an h2d copy from 200 ms to 800 ms,
// while device 0's stream 3 runs 50 µs kernels every 100 µs, 10,000 of them, and each step is a
// mark on stream 0 (never drawn running).
func longOps() []timeline.Event {
	evs := []timeline.Event{
		{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Device: 0, Stream: 1, Peer: -1, Start: 1e6, End: 1001e6, Bytes: 1 << 30, Ranks: 2, Queued: -1},
		{Kind: timeline.KindMemcpy, Sub: uint8(timeline.CopyH2D), Device: 1, Stream: 2, Peer: -1, Start: 200e6, End: 800e6, Bytes: 8 << 30, Queued: -1},
		{Kind: timeline.KindStep, Device: -1, Peer: -1, Start: 0, End: 1001e6, Queued: -1},
	}
	for i := range int64(10_000) {
		evs = append(evs, timeline.Event{Kind: timeline.KindKernel, Device: 0, Stream: 3, Peer: -1, Start: i * 100e3, End: i*100e3 + 50e3, Label: 1, Queued: -1})
	}
	return evs
}

// writeOrdered writes evs to a recording in chunks of 1,024, by end as the simulator reports ops
// (byEnd) or by start as the trace importers do, and returns its path and the events in that order.
func writeOrdered(t testing.TB, evs []timeline.Event, byEnd bool) (string, []timeline.Event) {
	t.Helper()
	evs = slices.Clone(evs)
	slices.SortStableFunc(evs, func(a, b timeline.Event) int {
		if byEnd {
			return cmp.Or(cmp.Compare(a.End, b.End), cmp.Compare(a.Start, b.Start))
		}
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.End, b.End))
	})
	path := filepath.Join(t.TempDir(), "long.xfr")
	w, err := recordings.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteMeta(recordings.Meta{Source: "sim", Backend: "sim", Devices: 2, GPUsPerHost: 2}); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteStrings(1, []string{"gemm"}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(evs); i += 1024 {
		if err := w.WriteEvents(evs[i:min(i+1024, len(evs))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path, evs
}

// underWay is what a replay at pos must report running: every op drawn on a stream with
// start ≤ pos < end, its End set to pos, sorted.
func underWay(evs []timeline.Event, pos int64) []timeline.Event {
	var out []timeline.Event
	for _, e := range evs {
		if running(&e) && e.Start <= pos && pos < e.End {
			e.End = pos
			out = append(out, e)
		}
	}
	sortEvents(out)
	return out
}

// ended counts the events that end in [from, pos]: what a console's replay at pos has emitted.
func ended(evs []timeline.Event, from, pos int64) int {
	n := 0
	for _, e := range evs {
		if e.End >= from && e.End <= pos {
			n++
		}
	}
	return n
}

func sortEvents(evs []timeline.Event) {
	slices.SortFunc(evs, func(a, b timeline.Event) int {
		return cmp.Or(cmp.Compare(a.Device, b.Device), cmp.Compare(a.Stream, b.Stream), cmp.Compare(a.Start, b.Start))
	})
}

// pausedReplay is a console's replay paced by a manual clock, so a test stops it where it wants.
type pausedReplay struct {
	t     *testing.T
	rs    *ReplaySource
	clk   *manualclock.Clock
	ctx   context.Context
	speed float64
}

func startPaused(t *testing.T, path string, speed float64, from int64) *pausedReplay {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	clk := manualclock.New(time.Unix(1_000_000, 0))
	rs, err := StartReplay(ctx, ReplayConfig{Path: path, Speed: speed, From: time.Duration(from), Clock: clk}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rs.Stop)
	p := &pausedReplay{t: t, rs: rs, clk: clk, ctx: ctx, speed: speed}
	if err := clk.WaitSleeper(ctx, 0); err != nil {
		t.Fatal("the replay never waited for its first event:", err)
	}
	return p
}

// step moves the wall clock on by d, in slices the replay sleeps through, and waits for it to settle.
func (p *pausedReplay) step(d time.Duration) {
	p.t.Helper()
	for d > 0 {
		s := min(d, sleepSlice)
		if err := p.clk.Step(p.ctx, s); err != nil {
			p.t.Fatal("the replay did not settle:", err)
		}
		d -= s
	}
}

// setSpeed changes the pace and waits until the replay sleeps at it.
func (p *pausedReplay) setSpeed(x float64) {
	p.t.Helper()
	s := p.clk.Seq()
	p.rs.SetSpeed(x)
	p.speed = x
	if err := p.clk.WaitSleeper(p.ctx, s); err != nil {
		p.t.Fatal("the replay did not settle after the speed change:", err)
	}
}

// end moves the clock on by d, past the recording's end, and waits until the replay is done.
func (p *pausedReplay) end(d time.Duration) {
	p.t.Helper()
	for ; d > 0 && !p.rs.Done(); d -= sleepSlice {
		p.clk.Advance(sleepSlice)
		for i := 0; i < 1000 && p.clk.Sleepers() == 0 && !p.rs.Done(); i++ {
			time.Sleep(time.Millisecond)
		}
	}
	if !p.rs.Done() {
		p.t.Fatal("the replay did not end")
	}
}

// seek jumps and waits until the replay waits at the new position.
func (p *pausedReplay) seek(t int64) {
	p.t.Helper()
	s := p.clk.Seq()
	p.rs.SeekTo(t)
	if err := p.clk.WaitSleeper(p.ctx, s); err != nil {
		p.t.Fatal("the replay did not settle after the seek:", err)
	}
}

// check asserts the replay at pos has emitted the ops ended by then (all but those that ended
// within the millisecond it sleeps at least) and none other, and reports running exactly the ops
// under way there.
func (p *pausedReplay) check(order []timeline.Event, from, pos int64) {
	p.t.Helper()
	snap := p.rs.Snapshot()
	n := int(snap.Total - snap.Base)
	lo, hi := ended(order, from, pos-int64(float64(minSleep)*p.speed)), ended(order, from, pos)
	if n < lo || n > hi {
		p.t.Errorf("at %d ns: %d events emitted; want %d to %d", pos, n, lo, hi)
	}
	for i := snap.Base; i < snap.Total; i++ {
		if e := snap.At(i); e.End > pos {
			p.t.Fatalf("at %d ns: emitted %+v, which ends later", pos, *e)
		}
	}
	got := p.rs.InFlight(nil)
	sortEvents(got)
	want := underWay(order, pos)
	if !slices.Equal(got, want) {
		p.t.Errorf("at %d ns: %d ops under way %v; want %d %v", pos, len(got), brief(got), len(want), brief(want))
	}
}

func brief(evs []timeline.Event) [][4]int64 {
	out := make([][4]int64, 0, len(evs))
	for _, e := range evs[:min(len(evs), 6)] {
		out = append(out, [4]int64{int64(e.Device), int64(e.Stream), e.Start, e.End})
	}
	return out
}

// A replay, in a recording in end order (the long ops many chunks after the position, found
// through the index) or in start order (an import's), reports running at each position the ops
// under way there, with End at the position, and has emitted exactly the ops ended before (in start
// order too: an op that ended while a longer one that started before it still runs is not held
// back until that one ends); at the end nothing runs.
func TestReplayInFlight(t *testing.T) {
	for _, byEnd := range []bool{true, false} {
		name := map[bool]string{true: "by-end", false: "by-start"}[byEnd]
		t.Run(name, func(t *testing.T) {
			path, order := writeOrdered(t, longOps(), byEnd)
			p := startPaused(t, path, 1, 0)
			pos := int64(0)
			p.check(order, 0, pos)
			for _, d := range []time.Duration{time.Millisecond + 20*time.Microsecond, 99 * time.Millisecond, 300 * time.Millisecond, 170 * time.Millisecond, 330 * time.Millisecond} {
				p.step(d)
				pos += d.Nanoseconds()
				p.check(order, 0, pos)
			}
			got := p.rs.InFlight(nil)
			if !slices.ContainsFunc(got, func(e timeline.Event) bool { return e.Kind == timeline.KindCollective && e.End == pos }) {
				t.Fatalf("at %d ns under way %v; want the all-reduce, up to the position", pos, brief(got))
			}
			p.end(time.Second)
			if n := len(p.rs.InFlight(nil)); n != 0 {
				t.Errorf("at the end: %d ops under way", n)
			}
		})
	}
}

// Between the replay's wake-ups the console's position moves on with the clock: an op that starts
// in between is reported (it was published ahead, up to the horizon), one that ends is not.
func TestReplayInFlightBetweenWakes(t *testing.T) {
	path, order := writeOrdered(t, longOps(), true)
	p := startPaused(t, path, 1, 0)
	p.step(199 * time.Millisecond)
	// 2 ms more without letting the replay wake: the copy has started at 200 ms.
	p.clk.Advance(2 * time.Millisecond)
	got := p.rs.InFlight(nil)
	sortEvents(got)
	if want := underWay(order, 201e6); !slices.Equal(got, want) {
		t.Errorf("at 201 ms between wake-ups: %v; want %v", brief(got), brief(want))
	}
}

// A seek reports the ops under way at the new position only: none from before it, and the long
// ops again when the seek lands inside them, found from the position sought.
func TestReplaySeekInFlight(t *testing.T) {
	for _, byEnd := range []bool{true, false} {
		name := map[bool]string{true: "by-end", false: "by-start"}[byEnd]
		t.Run(name, func(t *testing.T) {
			path, order := writeOrdered(t, longOps(), byEnd)
			p := startPaused(t, path, 1, 0)
			p.step(500 * time.Millisecond)
			p.check(order, 0, 500e6)
			gen := p.rs.Snapshot().Generation
			for _, to := range []int64{100e6, 900e6, 0, 700e6} {
				p.seek(to)
				if g := p.rs.Snapshot().Generation; g == gen {
					t.Fatalf("seek to %d: still generation %d", to, g)
				}
				gen = p.rs.Snapshot().Generation
				p.check(order, to, to)
				p.step(30 * time.Millisecond)
				p.check(order, to, to+30e6)
			}
		})
	}
}

// A speed change keeps the position where it is (the replay used to jump to the end of the op it
// waited for, here the all-reduce's, 0.6 s on) and moves it on at the new pace.
func TestReplaySpeedChangeKeepsPosition(t *testing.T) {
	path, order := writeOrdered(t, longOps(), true)
	p := startPaused(t, path, 1, 0)
	p.step(400 * time.Millisecond)
	p.setSpeed(0.25)
	p.step(200 * time.Millisecond) // 50 ms of the run
	p.check(order, 0, 450e6)
	p.setSpeed(2)
	p.step(100 * time.Millisecond) // 200 ms of the run
	p.check(order, 0, 650e6)
}

// As fast as possible, the position is the latest end emitted; the replay reports what runs there
// when the console asks, and nothing once it has ended.
func TestReplayInFlightUnpaced(t *testing.T) {
	path, _ := writeOrdered(t, longOps(), true)
	rs, err := StartReplay(context.Background(), ReplayConfig{Path: path}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Stop()
	deadline := time.Now().Add(10 * time.Second)
	for !rs.Done() && time.Now().Before(deadline) {
		for _, e := range rs.InFlight(nil) {
			if e.Start > e.End {
				t.Fatalf("running op %+v starts after the position", e)
			}
		}
		time.Sleep(time.Millisecond)
	}
	if !rs.Done() {
		t.Fatal("the replay did not end")
	}
	if got := rs.InFlight(nil); len(got) != 0 {
		t.Errorf("%d ops under way after the end", len(got))
	}
}

// A communicator's init is under way in a replay as in a live run: while it alone runs (no stream
// has anything), the replay reports it up to the position, so the console's position moves on.
func TestReplayInFlightCommInit(t *testing.T) {
	evs := []timeline.Event{
		{Kind: timeline.KindCommInit, Device: 0, Peer: -1, Comm: 1, Ranks: 2, Start: 0, End: 900e6, Queued: -1},
		{Kind: timeline.KindKernel, Device: 0, Stream: 3, Peer: -1, Start: 900e6, End: 950e6, Label: 1, Queued: -1},
	}
	path, _ := writeOrdered(t, evs, true)
	p := startPaused(t, path, 1, 0)
	p.step(300 * time.Millisecond)
	got := p.rs.InFlight(nil)
	if len(got) != 1 || got[0].Kind != timeline.KindCommInit || got[0].Start != 0 || got[0].End != 300e6 {
		t.Errorf("300 ms into a 900 ms communicator init: in flight %+v; want the init, up to 300 ms", got)
	}
}
