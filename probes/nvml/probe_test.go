package nvml

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xfertop/xfertop/timeline"
)

type fakeReader struct {
	initErr error
	n       int
	calls   int
	fail    int // device that fails to sample
}

func (f *fakeReader) Init() error         { return f.initErr }
func (f *fakeReader) Count() (int, error) { return f.n, nil }
func (f *fakeReader) Shutdown()           {}
func (f *fakeReader) Sample(d int) (Sample, error) {
	f.calls++
	if d == f.fail {
		return Sample{}, errors.New("GPU is lost")
	}
	return Sample{UtilPct: 50, MemUsed: 1 << 30, PCIeRx: 1e9, PCIeTx: 2e9, NVLinkRx: -1, NVLinkTx: -1, PowerMilliW: 300_000, SMClockMHz: 1980, TempC: 60}, nil
}

type collector struct {
	mu     sync.Mutex
	events []timeline.Event
	strs   *timeline.Strings
	// enough, when set, is called with each event kept and ends the run when it says so: a test
	// waits for what it needs, not for a time a loaded machine may not keep.
	enough func(events []timeline.Event) bool
	stop   context.CancelFunc
}

func (c *collector) emit(e *timeline.Event, msg string) {
	c.mu.Lock()
	if msg != "" {
		e.Label = c.strs.ID(msg)
	}
	c.events = append(c.events, *e)
	if c.enough != nil && c.enough(c.events) {
		c.stop()
	}
	c.mu.Unlock()
}

func run(t *testing.T, r Reader, d time.Duration) (*collector, error) {
	return runUntil(t, r, d, nil)
}

// runUntil runs the probe until enough says so, or for d at most.
func runUntil(t *testing.T, r Reader, d time.Duration, enough func([]timeline.Event) bool) (*collector, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	c := &collector{strs: timeline.NewStrings(), enough: enough, stop: cancel}
	p := New(r, 10*time.Millisecond, c.emit, func() int64 { return 42 })
	err := p.Run(ctx)
	return c, err
}

func TestProbeSamples(t *testing.T) {
	// Six rounds of device 0's seven metrics, however long a loaded machine takes to sample them.
	sixRounds := func(evs []timeline.Event) bool {
		n := 0
		for i := range evs {
			if evs[i].Kind == timeline.KindDeviceSample && evs[i].Device == 1 {
				n++
			}
		}
		return n >= 6*7
	}
	c, err := runUntil(t, &fakeReader{n: 3, fail: 2}, 30*time.Second, sixRounds)
	if err != nil {
		t.Fatal(err)
	}
	per := map[int32]int{}
	alerts := 0
	for _, e := range c.events {
		switch e.Kind {
		case timeline.KindDeviceSample:
			per[e.Device]++
			if e.Sub == uint8(timeline.SamplePCIeTx) && e.Bytes != 2e9 {
				t.Errorf("PCIe TX %d", e.Bytes)
			}
			if e.Sub == uint8(timeline.SampleNVLinkRx) {
				t.Error("a device without NVLink reported NVLink throughput")
			}
		case timeline.KindAlert:
			alerts++
		}
	}
	if per[0] < 5*7 || per[1] != per[0] || per[2] != 0 {
		t.Errorf("samples per device %v; want ~6 rounds of 7 metrics for devices 0 and 1, none for the failing one", per)
	}
	if alerts != 1 {
		t.Errorf("%d alerts for the failing device; want it said once", alerts)
	}
}

// Without NVML the probe says why, once, and returns.
func TestProbeUnavailable(t *testing.T) {
	missing := "NVML library not found (looked for /nonexistent/libnvidia-ml.so.1)"
	if !Supported {
		missing = "needs a build with cgo enabled"
	}
	for _, tc := range []struct {
		r    Reader
		want string
	}{
		{&fakeReader{initErr: errors.New("NVML library not found (looked for libnvidia-ml.so.1)")}, "NVML library not found"},
		{&fakeReader{n: 0}, "no devices"},
		{NewLibrary("/nonexistent/libnvidia-ml.so.1"), missing},
	} {
		c, err := run(t, tc.r, time.Second)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err %v; want %q", err, tc.want)
		}
		if len(c.events) != 1 || c.events[0].Kind != timeline.KindAlert || !strings.Contains(c.strs.Lookup(c.events[0].Label), tc.want) {
			t.Errorf("events %+v; want one alert saying %q", c.events, tc.want)
		}
	}
}
