// Package nvml samples each GPU's telemetry through NVML at an interval (utilisation, memory, PCIe
// and NVLink throughput, power, SM clock, temperature) and emits device-sample events, so the
// report, recordings and the console show what the hardware did beside what the engine did.
//
// NVML is loaded at run time (libnvidia-ml.so.1); where it is missing or sees no device, the probe
// says why once, as an alert event, and everything else goes on.
package nvml

import (
	"context"
	"fmt"
	"time"

	"github.com/xfertop/xfertop/timeline"
)

// DefaultInterval is how often devices are sampled.
const DefaultInterval = 500 * time.Millisecond

// Sample is one device's readings. Throughputs are bytes per second; a negative value means the
// device cannot report it (no NVLink, say).
type Sample struct {
	UtilPct     int64
	MemUsed     int64
	PCIeRx      int64
	PCIeTx      int64
	NVLinkRx    int64
	NVLinkTx    int64
	PowerMilliW int64
	SMClockMHz  int64
	TempC       int64
}

// Reader is the part of NVML the probe uses. Implementations need not be safe for concurrent use:
// the probe calls them from one goroutine.
type Reader interface {
	Init() error
	Count() (int, error)
	Sample(device int) (Sample, error)
	Shutdown()
}

// Emit receives the probe's events, on the probe's goroutine. msg is an alert's text ("" for
// samples): the receiver interns it, since the session's string table is not the probe's to touch.
type Emit func(e *timeline.Event, msg string)

// Probe samples devices and emits their readings.
type Probe struct {
	r        Reader
	interval time.Duration
	emit     Emit
	now      func() int64 // session time, ns
}

// New returns a probe over r that emits through emit and stamps events with now.
func New(r Reader, interval time.Duration, emit Emit, now func() int64) *Probe {
	if interval <= 0 {
		interval = DefaultInterval
	}
	return &Probe{r: r, interval: interval, emit: emit, now: now}
}

// Run samples until ctx is done. When NVML cannot be used it emits one alert saying why and returns
// that error; the session goes on without telemetry.
func (p *Probe) Run(ctx context.Context) error {
	if err := p.r.Init(); err != nil {
		return p.unavailable(fmt.Errorf("NVML unavailable: %w: device telemetry is off", err))
	}
	defer p.r.Shutdown()
	n, err := p.r.Count()
	if err == nil && n == 0 {
		err = fmt.Errorf("no devices")
	}
	if err != nil {
		return p.unavailable(fmt.Errorf("NVML: %w: device telemetry is off", err))
	}
	tick := time.NewTicker(p.interval)
	defer tick.Stop()
	failed := map[int]bool{}
	for {
		for d := range n {
			s, err := p.r.Sample(d)
			if err != nil {
				if !failed[d] { // say it once per device, not every interval
					failed[d] = true
					p.alert(fmt.Sprintf("NVML: device %d: %v", d, err))
				}
				continue
			}
			p.emitSample(d, s)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func (p *Probe) unavailable(err error) error {
	p.alert(err.Error())
	return err
}

func (p *Probe) alert(msg string) {
	t := p.now()
	p.emit(&timeline.Event{Kind: timeline.KindAlert, Start: t, End: t, Device: timeline.NoDevice, Peer: timeline.NoDevice,
		Status: timeline.StatusError}, msg)
}

func (p *Probe) emitSample(d int, s Sample) {
	t := p.now()
	for _, m := range []struct {
		metric timeline.SampleMetric
		v      int64
	}{
		{timeline.SampleUtilization, s.UtilPct}, {timeline.SampleMemoryUsed, s.MemUsed}, {timeline.SamplePCIeRx, s.PCIeRx},
		{timeline.SamplePCIeTx, s.PCIeTx}, {timeline.SampleNVLinkRx, s.NVLinkRx}, {timeline.SampleNVLinkTx, s.NVLinkTx},
		{timeline.SamplePowerMilliW, s.PowerMilliW}, {timeline.SampleSMClockMHz, s.SMClockMHz}, {timeline.SampleTempC, s.TempC},
	} {
		if m.v < 0 {
			continue
		}
		p.emit(&timeline.Event{Kind: timeline.KindDeviceSample, Sub: uint8(m.metric), Bytes: m.v, Start: t, End: t,
			Device: int32(d), Peer: timeline.NoDevice}, "")
	}
}
