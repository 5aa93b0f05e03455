package analysis

import (
	"reflect"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

func TestAnalyzerSpan(t *testing.T) {
	tests := []struct {
		name                 string
		evs                  []timeline.Event
		events, first, durNs int64
	}{
		{"empty", nil, 0, 0, 0},
		{"one instant", []timeline.Event{instant(timeline.KindMark, 70)}, 1, 70, 0},
		{"first start, last end", []timeline.Event{kern(0, 1, 100, 200), kern(0, 1, 50, 60), instant(timeline.KindMark, 300)}, 3, 50, 250},
		// A source that started before the session: its ops lie before time 0, and count.
		{"before time 0", []timeline.Event{kern(0, 1, -500, -400), kern(0, 1, -300, -100)}, 2, -500, 400},
		{"across time 0", []timeline.Event{kern(0, 1, -500, -400), kern(0, 1, 100, 200)}, 2, -500, 700},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := fold(timeline.Meta{}, tc.evs)
			r := a.Result(nil)
			if a.Events() != tc.events || r.Events != tc.events || r.FirstNs != tc.first || r.DurationNs != tc.durNs {
				t.Errorf("events %d/%d, first %d, duration %d; want %d, %d, %d", a.Events(), r.Events, r.FirstNs, r.DurationNs,
					tc.events, tc.first, tc.durNs)
			}
		})
	}
}

func TestAnalyzerMeta(t *testing.T) {
	m := timeline.Meta{Source: "x", Devices: 4, GPUsPerHost: 2, KernelWaitNs: 7}
	a := New(m)
	a.Reset()
	if got := a.Meta(); got.Source != "x" || got.Devices != 4 || got.GPUsPerHost != 2 || got.KernelWaitNs != 7 {
		t.Errorf("Meta after Reset = %+v; want %+v", got, m)
	}
}

// synthSmall is a small run of every kind of event the analysis reads.
func synthSmall(strs *timeline.Strings, n int) []timeline.Event {
	return synthWorkload{devices: 4, gpusPerHost: 2, kernels: 6}.events(42, n, strs)
}

func TestAnalyzerReset(t *testing.T) {
	strs := timeline.NewStrings()
	evs := synthSmall(strs, 5000)
	m := synthWorkload{devices: 4, gpusPerHost: 2}.meta()
	a := fold(m, evs)
	a.Reset()
	if got, want := a.Result(strs), New(m).Result(strs); !reflect.DeepEqual(got, want) {
		t.Errorf("after Reset:\n got %+v\nwant %+v", got, want)
	}
	for i := range evs {
		a.Emit(&evs[i])
	}
	if got, want := a.Result(strs), fold(m, evs).Result(strs); !reflect.DeepEqual(got, want) {
		t.Errorf("folding again after Reset differs from a fresh analyzer")
	}
}

// A result does not change when the analyzer goes on. (Results are read-only: parts that did not
// change are shared with later results, TestResultCachesMatchFreshFold checks they are rebuilt
// when they change.)
func TestAnalyzerResultIsACopy(t *testing.T) {
	strs := timeline.NewStrings()
	evs := synthSmall(strs, 20_000)
	m := synthWorkload{devices: 4, gpusPerHost: 2}.meta()
	prefix := len(evs) / 2
	a := fold(m, evs[:prefix])
	r1 := a.Result(strs)
	if r1.Steps.Count == 0 || len(r1.Collectives.Rows) == 0 || r1.Barriers.Count == 0 || len(r1.Alerts) == 0 || len(r1.Links.Devices) == 0 ||
		len(r1.StreamIdle.TopGaps) == 0 || len(r1.CommCache.Comms) == 0 || len(r1.Telemetry) == 0 || len(r1.Barriers.Recent) == 0 {
		t.Fatalf("the workload does not exercise every accumulator: %+v", r1)
	}
	for i := prefix; i < len(evs); i++ {
		a.Emit(&evs[i])
	}
	want := fold(m, evs[:prefix]).Result(strs)
	if !reflect.DeepEqual(r1, want) {
		t.Error("a result changed when the analyzer folded more events")
	}
	if reflect.DeepEqual(a.Result(strs), want) {
		t.Fatal("folding more events changed nothing: the test shows nothing")
	}
	// The same for the link history, reachable only through Rate.
	r := a.Result(strs)
	k := r.DurationNs / BucketNs
	before, _ := r.Links.Devices[0].Rate(LinkNVLink, k)
	e := sendEv(0, 1, k*BucketNs, k*BucketNs+10, 1e9, 99)
	a.Emit(&e)
	if after, _ := r.Links.Devices[0].Rate(LinkNVLink, k); after != before {
		t.Errorf("a result's link rate changed from %v to %v when the analyzer went on", before, after)
	}
}

// Results asked for as events arrive (a console's frames, which reuse what did not change since the
// last) equal a fresh analyzer's over the same events, after every batch: each cache is rebuilt
// when its device or stream changes, and new devices and streams take their place in order.
func TestResultCachesMatchFreshFold(t *testing.T) {
	strs := timeline.NewStrings()
	w := synthWorkload{devices: 12, gpusPerHost: 4, kernels: 5}
	evs := w.events(5, 30_000, strs)
	a := New(w.meta())
	for lo, batch := 0, 1; lo < len(evs); lo, batch = lo+batch, batch*3/2+1 {
		hi := min(lo+batch, len(evs))
		for i := lo; i < hi; i++ {
			a.Emit(&evs[i])
		}
		got := a.Result(strs)
		if want := fold(w.meta(), evs[:hi]).Result(strs); !reflect.DeepEqual(got, want) {
			t.Fatalf("after %d events: %v differ from a fresh analyzer's", hi, diffFields(got, want))
		}
		if again := a.Result(strs); !reflect.DeepEqual(again, got) {
			t.Fatalf("after %d events: asking again gives %v otherwise", hi, diffFields(again, got))
		}
	}
}

// diffFields names the differing fields of two results, one level into struct fields.
func diffFields(a, b *Result) []string {
	var out []string
	va, vb := reflect.ValueOf(*a), reflect.ValueOf(*b)
	for i := range va.NumField() {
		fa, fb := va.Field(i), vb.Field(i)
		if reflect.DeepEqual(fa.Interface(), fb.Interface()) {
			continue
		}
		name := va.Type().Field(i).Name
		if fa.Kind() != reflect.Struct {
			out = append(out, name)
			continue
		}
		for j := range fa.NumField() {
			if fa.Type().Field(j).IsExported() && !reflect.DeepEqual(fa.Field(j).Interface(), fb.Field(j).Interface()) {
				out = append(out, name+"."+fa.Type().Field(j).Name)
			}
		}
	}
	return out
}

// The synthetic workload is consistent: every collective and barrier completes, and the figures
// are plausible (a check on the generator the benchmark uses).
func TestSynthWorkload(t *testing.T) {
	strs := timeline.NewStrings()
	w := synthWorkload{devices: 16, gpusPerHost: 8, kernels: 20}
	evs := w.events(1, 50_000, strs)
	r := fold(w.meta(), evs).Result(strs)
	if r.Collectives.Open != 0 || r.Collectives.Incomplete != 0 || r.Barriers.Open != 0 || r.StreamIdle.Reordered != 0 {
		t.Errorf("collectives open %d, incomplete %d; barriers open %d; reordered %d", r.Collectives.Open, r.Collectives.Incomplete,
			r.Barriers.Open, r.StreamIdle.Reordered)
	}
	if len(r.Collectives.Rows) != 1 || r.Collectives.Rows[0].Ranks != 16 || r.Collectives.Rows[0].Count != r.Steps.Count {
		t.Errorf("collective rows = %+v; want one all-reduce per step (%d)", r.Collectives.Rows, r.Steps.Count)
	}
	for _, c := range Causes() {
		if c != CauseBarrierWait && r.StreamIdle.ByCause[c.String()] <= 0 {
			t.Errorf("no %s in the workload: %v", c, r.StreamIdle.ByCause)
		}
	}
	if r.CommCache.Misses != 1 || r.CommCache.Hits != 16*r.Steps.Count {
		t.Errorf("comm cache = %+v", r.CommCache)
	}
}
