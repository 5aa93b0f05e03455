package analysis

import (
	"slices"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

func TestAlerts(t *testing.T) {
	strs := timeline.NewStrings()
	alert := func(at int64, st uint8, dev, peer int32, msg string) timeline.Event {
		e := instant(timeline.KindAlert, at)
		e.Status, e.Device, e.Peer, e.Label, e.Op, e.Bytes = st, dev, peer, strs.ID(msg), uint64(at), 4096
		return e
	}
	evs := []timeline.Event{
		alert(10, timeline.StatusTimeout, 2, 5, "send 2→5 stuck"),
		alert(20, timeline.StatusError, timeline.NoDevice, timeline.NoDevice, "communicator evicted"),
		alert(30, timeline.StatusError, 3, timeline.NoDevice, "copy failed"),
		kern(0, 1, 0, 10),
		withStatus(sendEv(0, 1, 0, 10, 1, 1), timeline.StatusTimeout), // a failed op is not an alert
	}
	a := fold(timeline.Meta{}, evs)
	r := a.Result(strs)
	want := []Alert{
		{At: 10, Kind: "watchdog", Message: "send 2→5 stuck", Op: 10, Ranks: []int32{2, 5}, Bytes: 4096},
		{At: 20, Kind: "error", Message: "communicator evicted", Op: 20, Ranks: []int32{}, Bytes: 4096},
		{At: 30, Kind: "error", Message: "copy failed", Op: 30, Ranks: []int32{3}, Bytes: 4096},
	}
	if r.AlertCount != 3 || len(r.Alerts) != len(want) {
		t.Fatalf("alerts = %+v (count %d); want %d", r.Alerts, r.AlertCount, len(want))
	}
	for i, got := range r.Alerts {
		w := want[i]
		if got.At != w.At || got.Kind != w.Kind || got.Message != w.Message || got.Op != w.Op || got.Bytes != w.Bytes ||
			got.Ranks == nil || !slices.Equal(got.Ranks, w.Ranks) {
			t.Errorf("alert %d = %+v; want %+v", i, got, w)
		}
	}
}

func TestAlertsCapped(t *testing.T) {
	var evs []timeline.Event
	for i := range int64(MaxAlertsKept + 50) {
		e := instant(timeline.KindAlert, i)
		e.Status = timeline.StatusError
		evs = append(evs, e)
	}
	r := analyze(timeline.Meta{}, evs...)
	if len(r.Alerts) != MaxAlertsKept || r.AlertCount != MaxAlertsKept+50 {
		t.Errorf("%d alerts listed, %d counted; want %d, %d", len(r.Alerts), r.AlertCount, MaxAlertsKept, MaxAlertsKept+50)
	}
	if r.Alerts[0].At != 0 || r.Alerts[MaxAlertsKept-1].At != MaxAlertsKept-1 {
		t.Errorf("listed alerts at %d..%d; want the first %d", r.Alerts[0].At, r.Alerts[len(r.Alerts)-1].At, MaxAlertsKept)
	}
}

func TestAlertsEmpty(t *testing.T) {
	r := analyze(timeline.Meta{})
	if r.Alerts == nil || len(r.Alerts) != 0 || r.AlertCount != 0 {
		t.Errorf("alerts = %#v, count %d; want empty, 0", r.Alerts, r.AlertCount)
	}
}

func sample(dev int32, m timeline.SampleMetric, at, v int64) timeline.Event {
	e := instant(timeline.KindDeviceSample, at)
	e.Device, e.Sub, e.Bytes = dev, uint8(m), v
	return e
}

func TestTelemetry(t *testing.T) {
	evs := []timeline.Event{
		sample(1, timeline.SampleUtilization, 0, 10), sample(0, timeline.SampleUtilization, 0, 10),
		sample(0, timeline.SampleUtilization, 1, 30), sample(0, timeline.SampleUtilization, 2, 20),
		sample(0, timeline.SampleMemoryUsed, 0, 1e9), sample(0, timeline.SampleMemoryUsed, 1, 2e9),
		sample(0, timeline.SampleTempC, 0, -5), sample(0, timeline.SampleTempC, 1, -7), // the max of negatives
		sample(1, timeline.SamplePowerMilliW, 0, 300_000), sample(1, timeline.SamplePCIeRx, 0, 7),
		sample(1, timeline.SampleMetric(0), 0, 99), sample(1, timeline.SampleMetric(12), 0, 99), // unknown metrics
	}
	tel := analyze(timeline.Meta{}, evs...).Telemetry
	type row struct {
		Device  int32
		Samples int64
		Metrics map[string]MeanMax
	}
	want := []row{
		{Device: 0, Samples: 3, Metrics: map[string]MeanMax{
			"utilization_pct":   {Mean: 20, Max: 30, Latest: 20},
			"memory_used_bytes": {Mean: 1.5e9, Max: 2e9, Latest: 2e9},
			"temperature_c":     {Mean: -6, Max: -5, Latest: -7},
		}},
		{Device: 1, Samples: 1, Metrics: map[string]MeanMax{
			"utilization_pct":     {Mean: 10, Max: 10, Latest: 10},
			"power_milliwatts":    {Mean: 300_000, Max: 300_000, Latest: 300_000},
			"pcie_rx_bytes_per_s": {Mean: 7, Max: 7, Latest: 7},
		}},
	}
	if len(tel) != len(want) {
		t.Fatalf("telemetry = %+v", tel)
	}
	for i, d := range tel {
		w, got := want[i], d.Metrics.Map()
		if d.Device != w.Device || d.Samples != w.Samples || d.Metrics.Len() != len(w.Metrics) || len(got) != len(w.Metrics) {
			t.Errorf("device %d = %+v; want %+v", i, d, w)
			continue
		}
		for k, v := range w.Metrics {
			if g, ok := d.Metrics.Get(k); !ok || g != v || got[k] != v {
				t.Errorf("device %d %s = %+v; want %+v", d.Device, k, g, v)
			}
		}
	}
}

func TestTelemetryMeanRounded(t *testing.T) {
	tel := analyze(timeline.Meta{}, sample(0, timeline.SampleSMClockMHz, 0, 1), sample(0, timeline.SampleSMClockMHz, 1, 1),
		sample(0, timeline.SampleSMClockMHz, 2, 2)).Telemetry
	if got, _ := tel[0].Metrics.Get("sm_clock_mhz"); got.Mean != 1.33 {
		t.Errorf("mean of 1, 1, 2 = %v; want 1.33", got.Mean)
	}
	if tel[0].Samples != 0 {
		t.Errorf("Samples = %d; want 0 (it counts utilisation samples)", tel[0].Samples)
	}
}

// Across devices, a metric's spread counts only the devices that sampled it, and the least
// utilised are listed lowest first, ties by device, the unsampled left out.
func TestTelemetrySpreadAndLeastUtilised(t *testing.T) {
	var evs []timeline.Event
	for d, u := range []int64{50, 10, 90, 10, 70} { // device 5 below samples only power
		evs = append(evs, sample(int32(d), timeline.SampleUtilization, 0, u), sample(int32(d), timeline.SampleUtilization, 1, u+2))
	}
	evs = append(evs, sample(5, timeline.SamplePowerMilliW, 0, 300_000))
	tel := analyze(timeline.Meta{}, evs...).Telemetry
	if s := TelemetrySpread(tel, "utilization_pct", Latest); s != (Spread{N: 5, Min: 12, P10: 12, P50: 52, P90: 92, Max: 92}) {
		t.Errorf("latest utilisation spread = %+v", s)
	}
	if s := TelemetrySpread(tel, "utilization_pct", Mean); s.N != 5 || s.Min != 11 || s.P50 != 51 {
		t.Errorf("mean utilisation spread = %+v", s)
	}
	if s := TelemetrySpread(tel, "temperature_c", Latest); s.N != 0 {
		t.Errorf("a metric no device sampled has spread %+v; want N = 0", s)
	}
	var got []int32
	for _, d := range LeastUtilised(tel, 3, Latest) {
		got = append(got, d.Device)
	}
	if !slices.Equal(got, []int32{1, 3, 0}) {
		t.Errorf("least utilised = %v; want 1, 3 (tied, by device), 0", got)
	}
	if n := len(LeastUtilised(tel, 10, Latest)); n != 5 {
		t.Errorf("least utilised of 10 lists %d; want the 5 that sampled utilisation", n)
	}
}
