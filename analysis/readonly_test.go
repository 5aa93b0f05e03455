package analysis

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// digest reads every number of a result a consumer can reach: its JSON (every exported field,
// through the custom encoders) and every device's link rate in every history bucket.
func digest(t testing.TB, r *Result) string {
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("marshal result: %v", err)
	}
	h := fnv.New64a()
	var buf [9]byte
	last := (r.FirstNs + r.DurationNs) / BucketNs
	for _, d := range r.Links.Devices {
		for l := range NumLinks {
			for k := max(0, last-HistoryBuckets-1); k <= last+1; k++ {
				v, ok := d.Rate(l, k)
				binary.LittleEndian.PutUint64(buf[:], math.Float64bits(v))
				buf[8] = 0
				if ok {
					buf[8] = 1
				}
				h.Write(buf[:])
			}
		}
	}
	return fmt.Sprintf("%s\nrates %x", js, h.Sum64())
}

// A published result never changes: results kept from every frame of a console (a batch of
// events, then a Result, over many devices so that frames share most rows with the one before)
// each equal, at the end, a fresh analyzer's result over the same events, and read the same as
// when they were made.
func TestOldResultsUnchangedAfterLaterFrames(t *testing.T) {
	strs := timeline.NewStrings()
	w := synthWorkload{devices: 70, gpusPerHost: 8, kernels: 4} // two 64-device history blocks
	t.Run("training steps", func(t *testing.T) { checkFrames(t, w.meta(), w.events(3, 30_000, strs), 500, strs) })
	t.Run("history wraps", func(t *testing.T) { checkFrames(t, w.meta(), spreadTransfers(70, 400), 100, strs) })
}

// spreadTransfers is sends of every 7th of devices, a third of a history bucket apart over steps,
// each lasting up to three buckets: the history's ring wraps more than once, and ops write buckets
// that earlier results hold.
func spreadTransfers(devices, steps int) []timeline.Event {
	r := rand.New(rand.NewPCG(1, 2))
	var evs []timeline.Event
	for s := range int64(steps) {
		for d := int32(s % 7); d < int32(devices); d += 7 {
			start := s*BucketNs/3 + int64(d)*1000
			evs = append(evs, sendEv(d, (d+1)%int32(devices), start, start+1+r.Int64N(3*BucketNs), 1+r.Int64N(1<<30), uint64(s)))
		}
	}
	slices.SortStableFunc(evs, func(a, b timeline.Event) int { return cmp.Compare(a.End, b.End) })
	return evs
}

func checkFrames(t *testing.T, m timeline.Meta, evs []timeline.Event, batch int, strs *timeline.Strings) {
	a := New(m)
	type kept struct {
		upTo   int
		r      *Result
		digest string
	}
	var all []kept
	for lo := 0; lo < len(evs); lo += batch {
		hi := min(lo+batch, len(evs))
		for i := lo; i < hi; i++ {
			a.Emit(&evs[i])
		}
		r := a.Result(strs)
		all = append(all, kept{hi, r, digest(t, r)})
	}
	if len(all) < 40 {
		t.Fatalf("only %d frames", len(all))
	}
	for i, k := range all {
		if got := digest(t, k.r); got != k.digest {
			t.Fatalf("the result after %d events reads otherwise after later frames", k.upTo)
		}
		if i%8 != 0 && i != len(all)-1 {
			continue // a fresh fold per frame would make the test slow; the digest covers every frame
		}
		if want := fold(m, evs[:k.upTo]).Result(strs); !reflect.DeepEqual(k.r, want) {
			t.Fatalf("the result after %d events: %v differ from a fresh analyzer's", k.upTo, diffFields(k.r, want))
		}
	}
}

// A console reads a result on its own goroutine while the next ones are computed: under -race,
// any write to memory a published result shares is reported.
func TestOldResultReadWhileNewOnesAreComputed(t *testing.T) {
	strs := timeline.NewStrings()
	w := synthWorkload{devices: 80, gpusPerHost: 8, kernels: 4}
	t.Run("training steps", func(t *testing.T) { readWhileComputing(t, w.meta(), w.events(9, 40_000, strs), 500, strs) })
	t.Run("history wraps", func(t *testing.T) { readWhileComputing(t, w.meta(), spreadTransfers(80, 400), 50, strs) })
}

func readWhileComputing(t *testing.T, m timeline.Meta, evs []timeline.Event, batch int, strs *timeline.Strings) {
	a := New(m)
	half := len(evs) / 2
	for i := range half {
		a.Emit(&evs[i])
	}
	old := a.Result(strs)
	want := digest(t, old)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mismatches, reads int
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			reads++
			if digest(t, old) != want {
				mismatches++
			}
		}
	})
	for lo := half; lo < len(evs); lo += batch {
		for i := lo; i < min(lo+batch, len(evs)); i++ {
			a.Emit(&evs[i])
		}
		_ = a.Result(strs)
	}
	close(stop)
	wg.Wait()
	if mismatches > 0 {
		t.Errorf("%d of %d reads of the old result differed from what it said when made", mismatches, reads)
	}
}

// CauseNs and SampleStats encode exactly as the maps they replaced, and read back.
func TestRowValuesEncodeAsMaps(t *testing.T) {
	c := CauseNs{CauseHostWait: 5, CauseKernelWait: -3, CauseEventWait: 1 << 40, CausePeerWait: 7}
	var s SampleStats
	s.stats[timeline.SampleUtilization], s.has = MeanMax{Mean: 12.25, Max: 30, Latest: 20}, 1<<timeline.SampleUtilization
	s.stats[timeline.SampleTempC], s.has = MeanMax{Mean: -6.5, Max: 1e15, Latest: -7}, s.has|1<<timeline.SampleTempC
	s.stats[timeline.SamplePCIeRx], s.has = MeanMax{Mean: 1.5e21, Max: 7}, s.has|1<<timeline.SamplePCIeRx
	type rows struct {
		C CauseNs     `json:"c"`
		S SampleStats `json:"s"`
		E SampleStats `json:"e"`
	}
	type mapRows struct {
		C map[string]int64   `json:"c"`
		S map[string]MeanMax `json:"s"`
		E map[string]MeanMax `json:"e"`
	}
	got, want := rows{C: c, S: s}, mapRows{C: c.Map(), S: s.Map(), E: map[string]MeanMax{}}
	for _, indent := range []bool{false, true} {
		enc := func(v any) string {
			var b []byte
			var err error
			if indent {
				b, err = json.MarshalIndent(v, "", "  ")
			} else {
				b, err = json.Marshal(v)
			}
			if err != nil {
				t.Fatalf("marshal %T: %v", v, err)
			}
			return string(b)
		}
		if g, w := enc(got), enc(want); g != w {
			t.Errorf("indent %v: values encode as\n%s\nmaps as\n%s", indent, g, w)
		}
	}
	js, _ := json.Marshal(got)
	var back rows
	if err := json.Unmarshal(js, &back); err != nil || back != got {
		t.Errorf("read back %s: %+v, %v; want %+v", js, back, err, got)
	}
	if n := s.Len(); n != 3 || len(s.Map()) != 3 {
		t.Errorf("Len = %d, Map %v; want 3", n, s.Map())
	}
	if v, ok := s.Get("temperature_c"); !ok || v.Max != 1e15 {
		t.Errorf(`Get("temperature_c") = %+v, %v`, v, ok)
	}
	for _, name := range []string{"power_milliwatts", "", "nonsense"} {
		if v, ok := s.Get(name); ok || v != (MeanMax{}) {
			t.Errorf("Get(%q) = %+v, %v; want none", name, v, ok)
		}
	}
	if c.Total() != 5-3+1<<40+7 {
		t.Errorf("Total = %d", c.Total())
	}
	if m := c.Map(); len(m) != int(causeCount) || !maps.Equal(m, map[string]int64{"host_wait": 5, "kernel_wait": -3, "event_wait": 1 << 40,
		"barrier_wait": 0, "peer_wait": 7, "other": 0}) {
		t.Errorf("Map = %v", m)
	}
	for _, tc := range []struct{ in, want string }{
		{`{"c":{"waiting":1}}`, `unknown cause "waiting"`},
		{`{"c":[1]}`, "idle time by cause"},
		{`{"s":{"fan_rpm":{}}}`, `unknown metric "fan_rpm"`},
		{`{"s":{"":{}}}`, `unknown metric ""`},
		{`{"s":3}`, "telemetry metrics"},
	} {
		var r rows
		if err := json.Unmarshal([]byte(tc.in), &r); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Unmarshal(%s) = %v; want an error with %q", tc.in, err, tc.want)
		}
	}
}
