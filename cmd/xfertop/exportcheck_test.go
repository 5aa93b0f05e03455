package main

import (
	"strings"
	"testing"

	"github.com/xfertop/xfertop/report"
)

// TestExportFailureWording: a failed export's warning counts what it can. No metric point counted
// (the last collection given up with the spans) reads as none exported, not "0 of 0 metric points
// did not reach the collector".
func TestExportFailureWording(t *testing.T) {
	tests := []struct {
		name     string
		x        report.Export
		want     string
		wantNone string
	}{
		{"no metric point counted", report.Export{Endpoint: "e", State: "failing: x", SpansBuilt: 10, SpansDropped: 4},
			"4 of 10 spans did not reach the collector, and no metric point was exported (failing: x)", "0 of 0"},
		{"metric points counted", report.Export{Endpoint: "e", State: "failing: x", SpansBuilt: 10, SpansDropped: 4, MetricPoints: 8, MetricPointsDropped: 2},
			"4 of 10 spans and 2 of 8 metric points did not reach the collector", "no metric point"},
		{"recovered after a drop", report.Export{Endpoint: "e", State: "ok", SpansBuilt: 10, SpansDropped: 4, MetricPoints: 8,
			DropReason: "rpc error: code = Unavailable"}, "(ok; spans last dropped because: rpc error: code = Unavailable)", "failing"},
		{"nothing failed", report.Export{Endpoint: "e", State: "ok", SpansBuilt: 10, SpansExported: 10}, "", "failed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := exportFailure(&tc.x)
			if !strings.Contains(got, tc.want) || strings.Contains(got, tc.wantNone) || (tc.want == "") != (got == "") {
				t.Errorf("exportFailure = %q; want it to hold %q and not %q", got, tc.want, tc.wantNone)
			}
		})
	}
}
