package main

import (
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis/diagnosis"
	"github.com/xfertop/xfertop/campaign"
)

// TestDescribeCountsFindings: a trial's line counts its findings in words ("1 finding", not
// "1 findings").
func TestDescribeCountsFindings(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{{0, "(0 findings)"}, {1, "(1 finding)"}, {2, "(2 findings)"}} {
		tr := &campaign.Trial{Seed: 1, Findings: make([]diagnosis.Finding, tc.n)}
		if got := describe(tr); !strings.Contains(got, tc.want) {
			t.Errorf("%d findings: %q; want it to hold %q", tc.n, got, tc.want)
		}
	}
}
