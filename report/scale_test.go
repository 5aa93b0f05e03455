package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/timeline"
)

// manyDevices is a report of n devices: device d is idle d% of its 100 ms span (device 7 the
// most, 99%, when n > 7) and moves 1 GiB on NVLink, device 5 10 GiB.
func manyDevices(n int) *Report {
	r := &Report{Devices: n}
	for d := range n {
		idle := float64(d % 100)
		if d == 7 {
			idle = 99
		}
		ns := int64(idle * 1e6)
		r.Idle.Devices = append(r.Idle.Devices, analysis.DeviceTime{Device: int32(d), SpanNs: 100e6, IdleNs: ns, BusyNs: 100e6 - ns,
			IdlePct: idle, NonCompPct: 100 - idle})
		b := int64(1 << 30)
		if d == 5 {
			b = 10 << 30
		}
		r.Links.Devices = append(r.Links.Devices, analysis.DeviceLinks{Device: int32(d), NVLink: b, Total: b})
	}
	return r
}

// deviceRows counts the lines of text that are a device's row of the idle table (span 100 ms).
func deviceRows(text string) int {
	return len(regexp.MustCompile(`(?m)^\s+\d+\s+100 ms\s`).FindAllString(text, -1))
}

func TestTextAtScale(t *testing.T) {
	tests := []struct {
		name     string
		n        int
		opts     TextOptions
		rows     int      // idle table rows
		has, not []string // text the report must and must not hold
	}{
		{"64 devices: every row", 64, TextOptions{}, 64, nil, []string{"across 64 devices", "most idle"}},
		{"65 devices: summarised", 65, TextOptions{}, 10,
			[]string{"across 65 devices (--per-device lists each)", "The 10 devices most idle", "The 10 devices whose total is furthest from the median device's (1 GiB)"},
			nil},
		{"--top 3", 200, TextOptions{Top: 3}, 3, []string{"The 3 devices most idle"}, nil},
		{"--per-device", 200, TextOptions{PerDevice: true}, 200, nil, []string{"across 200 devices"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := TextWith(&b, manyDevices(tt.n), tt.opts); err != nil {
				t.Fatal(err)
			}
			text := b.String()
			if got := deviceRows(text); got != tt.rows {
				t.Errorf("%d device rows in the idle table; want %d:\n%s", got, tt.rows, text)
			}
			for _, s := range tt.has {
				if !strings.Contains(text, s) {
					t.Errorf("the report lacks %q:\n%s", s, text)
				}
			}
			for _, s := range tt.not {
				if strings.Contains(text, s) {
					t.Errorf("the report holds %q:\n%s", s, text)
				}
			}
		})
	}
}

// Above 64 devices the distribution is the devices' own (nearest rank), the worst come first with
// their figures, and the JSON still holds every device.
func TestTextAtScaleFigures(t *testing.T) {
	r := manyDevices(200) // idle % 0..99 twice, device 7 at 99: three devices at 99, one at 7
	var b bytes.Buffer
	if err := TextWith(&b, r, TextOptions{Top: 3}); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	// Sorted, 0..6 twice (14 values), 7 once (15), 8..99 twice: the 20th is 10, the 100th 50, the
	// 180th 90 (nearest rank).
	if want := regexp.MustCompile(`idle %\s+0\.0\s+10\.0\s+50\.0\s+90\.0\s+99\.0\s+200`); !want.MatchString(text) {
		t.Errorf("the idle %% distribution is not min 0, p10 10, p50 50, p90 90, max 99 over 200:\n%s", text)
	}
	// The most idle: the devices at 99% in device order (7, 99, 199), each with its row.
	if want := regexp.MustCompile(`most idle[^\n]*\n[^\n]*device[^\n]*\n\s+7\s[^\n]*99\.0[^\n]*\n\s+99\s[^\n]*\n\s+199\s`); !want.MatchString(text) {
		t.Errorf("the most idle devices are not 7, 99, 199:\n%s", text)
	}
	// Links: device 5 moved 10 GiB where the median moved 1 GiB: furthest first.
	if want := regexp.MustCompile(`furthest first:\n[^\n]*\n\s+5\s+0 B\s+10 GiB`); !want.MatchString(text) {
		t.Errorf("device 5 does not lead the devices furthest from the median:\n%s", text)
	}
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []int{0, 150, 199} {
		if !bytes.Contains(js, fmt.Appendf(nil, `"device":%d,`, d)) {
			t.Errorf("the JSON lacks device %d", d)
		}
	}
}

// The telemetry table above 64 devices: each metric's distribution of the devices' means (a metric
// no device sampled is unknown), then the least utilised with their rows; at 64 a row each.
func TestTelemetryAtScale(t *testing.T) {
	for _, n := range []int{64, 200} {
		var evs []timeline.Event
		for d := range int32(n) {
			u := int64(d%100) + 1 // 1..100 twice at 200: device 0 and 100 least utilised
			for _, v := range []int64{u - 1, u + 1} {
				evs = append(evs, timeline.Event{Kind: timeline.KindDeviceSample, Sub: uint8(timeline.SampleUtilization), Device: d, Bytes: v})
			}
		}
		var b bytes.Buffer
		if err := TextWith(&b, build(evs, timeline.NewStrings(), timeline.Meta{}), TextOptions{Top: 3}); err != nil {
			t.Fatal(err)
		}
		text := b.String()
		if n == 64 {
			if !strings.Contains(text, "Device telemetry (NVML, mean / max):") || !regexp.MustCompile(`(?m)^\s+63\s+2\s+64 / 65\s`).MatchString(text) {
				t.Errorf("64 devices: the telemetry is not a row each:\n%s", text)
			}
			continue
		}
		for _, re := range []string{
			`Device telemetry \(NVML: each device's mean\), across 200 devices \(--per-device lists each\):`,
			// means 1..100 twice: the 20th is 10, the 100th 50, the 180th 90 (nearest rank)
			`util %\s+1\.0\s+10\.0\s+50\.0\s+90\.0\s+100\.0\s+200`,
			`temp °C\s+—\s+—\s+—\s+—\s+—\s+0`,
			`The 3 devices least utilised[^\n]*\n[^\n]*device[^\n]*\n\s+0\s+2\s+1 / 2\s[^\n]*\n\s+100\s+2\s+1 / 2\s[^\n]*\n\s+1\s+2\s+2 / 3\s`,
		} {
			if !regexp.MustCompile(re).MatchString(text) {
				t.Errorf("200 devices: the telemetry lacks %s:\n%s", re, text)
			}
		}
	}
}
