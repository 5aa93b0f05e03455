package report

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/timeline"
)

// A device of the job that ran nothing (a rank hung before its first op: often the culprit) is
// listed with unknown figures, null in the JSON and "—" in the text, not left out of the device
// table, whose count is then the job's; the spreads are of the devices that ran.
func TestDeviceThatRanNothingListedUnknown(t *testing.T) {
	for _, n := range []int{4, 70} { // every row; summarised
		var res analysis.Result
		for d := range int32(n) {
			if d == 2 {
				continue // hung before its first op
			}
			res.Breakdown.Devices = append(res.Breakdown.Devices, analysis.DeviceTime{Device: d, SpanNs: 100e6, IdleNs: 50e6, BusyNs: 50e6, IdlePct: 50})
		}
		r := Build(&res, timeline.Meta{Devices: n, GPUsPerHost: 8}, Run{})
		if len(r.Idle.Devices) != n || r.Idle.Devices[2].Device != 2 || r.Idle.Devices[3].Device != 3 {
			t.Fatalf("%d devices: the report lists %d; want every one, by id", n, len(r.Idle.Devices))
		}
		js, err := json.Marshal(r.Idle.Devices[:3])
		if err != nil {
			t.Fatal(err)
		}
		var rows []map[string]any
		if err := json.Unmarshal(js, &rows); err != nil {
			t.Fatal(err)
		}
		if rows[2]["device"] != 2.0 || rows[2]["idle_pct"] != nil || rows[2]["span_ns"] != nil || rows[1]["idle_pct"] != 50.0 {
			t.Errorf("%d devices: JSON %s; want device 2's figures null, device 1's known", n, js)
		}
		var b bytes.Buffer
		if err := Text(&b, r); err != nil {
			t.Fatal(err)
		}
		txt := b.String()
		if !regexp.MustCompile(`(?m)^\s+2\s+—\s+—\s+—`).MatchString(txt) {
			t.Errorf("%d devices: no row of unknown figures for device 2:\n%s", n, txt)
		}
		if n > SummariseAbove && (!strings.Contains(txt, "across 70 devices") || !regexp.MustCompile(`idle %\s.*\s69\n`).MatchString(txt)) {
			t.Errorf("%d devices: want the table across 70 devices, its spreads over the 69 that ran:\n%s", n, txt)
		}
	}
}
