package main

import (
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/whatif"
)

// The noise floor's replay error is measured on the row the verdict is taken on, the mean step
// time after the first, not on the mean with the first step in (which holds the setup, and
// replays apart from the rest).
func TestNoiseFloorOnTheVerdictsRow(t *testing.T) {
	rep := func(mean, steady int64) *report.Report {
		return &report.Report{Steps: analysis.Steps{Count: 4, MeanNs: &mean, SteadyMeanNs: &steady}}
	}
	a, base := rep(431_000_000, 201_000_000), rep(399_500_000, 185_000_000) // mean −7.31%, after the first −7.96%
	floor, why := noiseFloor(a, base, nil, whatif.Summary{}, whatif.Summary{})
	if floor < 7.95 || floor > 7.97 {
		t.Errorf("floor %.2f%%; want the unchanged replay's error after the first step, 7.96%%", floor)
	}
	if !strings.Contains(why, report.SteadyRow+" -7.96%") {
		t.Errorf("why %q does not name the row it is taken on", why)
	}
}
