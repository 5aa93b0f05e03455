package analysis

import (
	"maps"
	"slices"

	"github.com/xfertop/xfertop/timeline"
)

// MaxAlertsKept is how many alerts the analysis lists; later ones are counted.
const MaxAlertsKept = 100

// Alert is a watchdog or error alert.
type Alert struct {
	At      int64   `json:"at_ns"`
	Kind    string  `json:"kind"` // watchdog or error
	Message string  `json:"message"`
	Op      uint64  `json:"op"`
	Ranks   []int32 `json:"ranks"`
	Bytes   int64   `json:"bytes"`
	label   uint32
}

type alerts struct {
	list  []Alert
	count int64
}

func (a *alerts) add(e *timeline.Event) {
	if e.Kind != timeline.KindAlert {
		return
	}
	a.count++
	if len(a.list) == MaxAlertsKept {
		return
	}
	kind := "error"
	if e.Status == timeline.StatusTimeout {
		kind = "watchdog"
	}
	al := Alert{At: e.Start, Kind: kind, Op: e.Op, Bytes: e.Bytes, Ranks: []int32{}, label: e.Label}
	for _, d := range [2]int32{e.Device, e.Peer} {
		if d >= 0 {
			al.Ranks = append(al.Ranks, d)
		}
	}
	a.list = append(a.list, al)
}

func (a *alerts) result(labels Labels) ([]Alert, int64) {
	out := slices.Clone(a.list)
	if out == nil {
		out = []Alert{}
	}
	for i := range out {
		if labels != nil {
			out[i].Message = labels.Lookup(out[i].label)
		}
		out[i].Ranks = slices.Clone(out[i].Ranks)
	}
	return out, a.count
}

var sampleNames = map[timeline.SampleMetric]string{
	timeline.SampleUtilization: "utilization_pct", timeline.SampleMemoryUsed: "memory_used_bytes",
	timeline.SamplePCIeRx: "pcie_rx_bytes_per_s", timeline.SamplePCIeTx: "pcie_tx_bytes_per_s",
	timeline.SampleNVLinkRx: "nvlink_rx_bytes_per_s", timeline.SampleNVLinkTx: "nvlink_tx_bytes_per_s",
	timeline.SamplePowerMilliW: "power_milliwatts", timeline.SampleSMClockMHz: "sm_clock_mhz", timeline.SampleTempC: "temperature_c",
}

const numSampleMetrics = 10

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
}

// deviceSamples is one device's metrics and its last result row, valid while rowValid.
type deviceSamples struct {
	acc      [numSampleMetrics]metricAcc
	row      DeviceTelemetry
	rowValid bool
}

func (t *telemetry) add(e *timeline.Event) {
	if e.Kind != timeline.KindDeviceSample || int(e.Sub) >= numSampleMetrics {
		return
	}
	if _, ok := sampleNames[timeline.SampleMetric(e.Sub)]; !ok {
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
	d.rowValid = false
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

// DeviceTelemetry summarises one device's samples. Throughputs are bytes/s, memory bytes, power
// milliwatts. Samples counts utilisation samples (one per sampling round).
type DeviceTelemetry struct {
	Device  int32              `json:"device"`
	Samples int64              `json:"samples"`
	Metrics map[string]MeanMax `json:"metrics"`
}

func (t *telemetry) result() []DeviceTelemetry {
	if len(t.order) != len(t.devs) {
		t.order = slices.Sorted(maps.Keys(t.devs))
	}
	out := make([]DeviceTelemetry, 0, len(t.order))
	for _, dev := range t.order {
		d := t.devs[dev]
		if !d.rowValid {
			// A new map: rows handed out are never written.
			row := DeviceTelemetry{Device: dev, Samples: d.acc[timeline.SampleUtilization].n, Metrics: map[string]MeanMax{}}
			for sub, name := range sampleNames {
				if m := &d.acc[sub]; m.n > 0 {
					row.Metrics[name] = MeanMax{Mean: round2(m.sum / float64(m.n)), Max: m.max, Latest: m.latest}
				}
			}
			d.row, d.rowValid = row, true
		}
		out = append(out, d.row)
	}
	return out
}
