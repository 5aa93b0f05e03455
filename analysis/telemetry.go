package analysis

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/xfertop/xfertop/timeline"
)

const numSampleMetrics = 10

// sampleNames is each metric's report key, by SampleMetric; "" for a number that names none.
var sampleNames = [numSampleMetrics]string{
	timeline.SampleUtilization: "utilization_pct", timeline.SampleMemoryUsed: "memory_used_bytes",
	timeline.SamplePCIeRx: "pcie_rx_bytes_per_s", timeline.SamplePCIeTx: "pcie_tx_bytes_per_s",
	timeline.SampleNVLinkRx: "nvlink_rx_bytes_per_s", timeline.SampleNVLinkTx: "nvlink_tx_bytes_per_s",
	timeline.SamplePowerMilliW: "power_milliwatts", timeline.SampleSMClockMHz: "sm_clock_mhz", timeline.SampleTempC: "temperature_c",
}

// sampleKeyOrder is the named metrics in the order of their keys, as encoding/json sorts a map's.
var sampleKeyOrder = func() []timeline.SampleMetric {
	var out []timeline.SampleMetric
	for m, name := range sampleNames {
		if name != "" {
			out = append(out, timeline.SampleMetric(m))
		}
	}
	slices.SortFunc(out, func(a, b timeline.SampleMetric) int {
		if sampleNames[a] < sampleNames[b] {
			return -1
		}
		return 1
	})
	return out
}()

type metricAcc struct {
	sum         float64
	n           int64
	max, latest int64
}

// telemetry folds device samples (NVML): per device and metric the mean, maximum and latest value.
type telemetry struct {
	devs map[int32]*deviceSamples
	// order is the devices in result order, rebuilt when one is added.
	order []int32
	// pub is the rows last handed out, shared while no sample arrived (rows are read-only).
	pub     []DeviceTelemetry
	changed bool
}

// deviceSamples is one device's metrics and its last result row, valid while rowValid.
type deviceSamples struct {
	acc      [numSampleMetrics]metricAcc
	row      DeviceTelemetry
	rowValid bool
}

func (t *telemetry) add(e *timeline.Event) {
	if e.Kind == timeline.KindDeviceSample {
		t.fold(e) // the test inlines into Analyzer.Emit (see transfers.add)
	}
}

func (t *telemetry) fold(e *timeline.Event) {
	if int(e.Sub) >= numSampleMetrics || sampleNames[e.Sub] == "" {
		return
	}
	if t.devs == nil {
		t.devs = map[int32]*deviceSamples{}
	}
	d := t.devs[e.Device]
	if d == nil {
		d = &deviceSamples{}
		t.devs[e.Device] = d
	}
	d.rowValid, t.changed = false, true
	m := &d.acc[e.Sub]
	if m.n == 0 || e.Bytes > m.max {
		m.max = e.Bytes
	}
	m.sum += float64(e.Bytes)
	m.n++
	m.latest = e.Bytes
}

// MeanMax is a metric's mean, maximum and latest sample.
type MeanMax struct {
	Mean   float64 `json:"mean"`
	Max    int64   `json:"max"`
	Latest int64   `json:"latest"`
}

// SampleStats is one device's metrics: for each metric that was sampled, its mean, maximum and
// latest sample. It is a value, not a map, because a result holds one per device (512 at 512
// devices, each rebuilt on every frame that sampled it); it encodes in JSON as an object keyed by
// the metrics' report keys, in key order, exactly as a map[string]MeanMax would.
type SampleStats struct {
	stats [numSampleMetrics]MeanMax
	has   uint16 // bit m: metric m was sampled
}

// Get returns the metric whose report key is name (utilization_pct, pcie_rx_bytes_per_s, …), and
// false when it was not sampled.
func (s *SampleStats) Get(name string) (MeanMax, bool) {
	for m, n := range sampleNames {
		if n == name && n != "" {
			return s.stats[m], s.has&(1<<m) != 0
		}
	}
	return MeanMax{}, false
}

// Len returns how many metrics were sampled.
func (s *SampleStats) Len() int {
	n := 0
	for m := range numSampleMetrics {
		if s.has&(1<<m) != 0 {
			n++
		}
	}
	return n
}

// Map returns the sampled metrics keyed by their report keys.
func (s *SampleStats) Map() map[string]MeanMax {
	out := make(map[string]MeanMax, s.Len())
	for m, name := range sampleNames {
		if s.has&(1<<m) != 0 {
			out[name] = s.stats[m]
		}
	}
	return out
}

// MarshalJSON writes {"memory_used_bytes":{…},…}: the sampled metrics, keys in order.
func (s SampleStats) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for _, m := range sampleKeyOrder {
		if s.has&(1<<m) == 0 {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		v, err := json.Marshal(s.stats[m])
		if err != nil {
			return nil, fmt.Errorf("telemetry %s: %w", sampleNames[m], err)
		}
		b = strconv.AppendQuote(b, sampleNames[m])
		b = append(b, ':')
		b = append(b, v...)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *SampleStats) UnmarshalJSON(data []byte) error {
	var in map[string]MeanMax
	if err := json.Unmarshal(data, &in); err != nil {
		return fmt.Errorf("telemetry metrics: %w", err)
	}
	*s = SampleStats{}
	for _, name := range slices.Sorted(maps.Keys(in)) {
		m := slices.Index(sampleNames[:], name)
		if m < 0 || name == "" {
			return fmt.Errorf("telemetry metrics: unknown metric %q", name)
		}
		s.stats[m], s.has = in[name], s.has|1<<m
	}
	return nil
}

// DeviceTelemetry summarises one device's samples. Throughputs are bytes/s, memory bytes, power
// milliwatts. Samples counts utilisation samples (one per sampling round).
type DeviceTelemetry struct {
	Device  int32       `json:"device"`
	Samples int64       `json:"samples"`
	Metrics SampleStats `json:"metrics"`
}

func (t *telemetry) result() []DeviceTelemetry {
	if !t.changed && t.pub != nil {
		return t.pub
	}
	if len(t.order) != len(t.devs) {
		t.order = slices.Sorted(maps.Keys(t.devs))
	}
	out := make([]DeviceTelemetry, 0, len(t.order))
	for _, dev := range t.order {
		d := t.devs[dev]
		if !d.rowValid {
			row := DeviceTelemetry{Device: dev, Samples: d.acc[timeline.SampleUtilization].n}
			for sub, m := range d.acc {
				if m.n > 0 {
					row.Metrics.stats[sub] = MeanMax{Mean: round2(m.sum / float64(m.n)), Max: m.max, Latest: m.latest}
					row.Metrics.has |= 1 << sub
				}
			}
			d.row, d.rowValid = row, true
		}
		out = append(out, d.row)
	}
	t.pub, t.changed = out, false
	return out
}

// Latest picks a metric's latest sample: what the console shows now.
func Latest(m MeanMax) float64 { return float64(m.Latest) }

// Mean picks a metric's mean: what the report gives for a run.
func Mean(m MeanMax) float64 { return m.Mean }

// TelemetrySpread is one metric's distribution across the devices of tel that sampled it (pick
// says which figure of each: Latest or Mean); N = 0 when none did.
func TelemetrySpread(tel []DeviceTelemetry, name string, pick func(MeanMax) float64) Spread {
	vals := make([]float64, len(tel))
	for i := range tel {
		vals[i] = math.NaN()
		if m, ok := tel[i].Metrics.Get(name); ok {
			vals[i] = pick(m)
		}
	}
	return SpreadOf(vals)
}

// LeastUtilised returns the k devices of tel whose utilisation (by pick) is lowest, lowest first,
// ties in device order: on a job whose GPUs all work alike, the ones that are not. Devices that
// sampled no utilisation are left out (unknown, not idle).
func LeastUtilised(tel []DeviceTelemetry, k int, pick func(MeanMax) float64) []DeviceTelemetry {
	type dev struct {
		util float64
		i    int
	}
	var ds []dev
	for i := range tel {
		if m, ok := tel[i].Metrics.Get("utilization_pct"); ok {
			ds = append(ds, dev{pick(m), i})
		}
	}
	slices.SortStableFunc(ds, func(a, b dev) int {
		return cmp.Or(cmp.Compare(a.util, b.util), cmp.Compare(tel[a.i].Device, tel[b.i].Device))
	})
	out := make([]DeviceTelemetry, 0, min(k, len(ds)))
	for _, d := range ds[:min(k, len(ds))] {
		out = append(out, tel[d.i])
	}
	return out
}
