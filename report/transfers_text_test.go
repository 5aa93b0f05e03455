package report

import (
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis"
)

// The transfers section: no table when nothing moved; a rate the timestamps' resolution leaves
// uncertain is a range (or a lower bound), with a line saying why, never a bare figure.
func TestTransfersText(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		name    string
		tr      analysis.Transfers
		want    []string
		wantNot []string
	}{
		{"none: no table", analysis.Transfers{ByKind: map[string]analysis.Stats{}},
			[]string{"Transfers: 0, 0 B payload"}, []string{"kind", "GB/s is payload-weighted"}},
		{"uncertain rates as ranges", analysis.Transfers{Count: 2, Bytes: 5 << 20, ByKind: map[string]analysis.Stats{
			"memset": {Count: 2, Bytes: 5 << 20, BusyNs: 5000, GBpsMin: f(699.05), GBpsMax: f(1310.72)},
			"h2d":    {Count: 1, Bytes: 1024, BusyNs: 1000, GBpsMin: f(0.51)},
		}}, []string{"699.05–1310.72", "≥ 0.51", "A range (lo–hi, or ≥ lo)"}, []string{"1048.58"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			transfersText(&b, &Report{Transfers: tc.tr})
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("missing %q in:\n%s", w, b.String())
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(b.String(), w) {
					t.Errorf("%q should not be in:\n%s", w, b.String())
				}
			}
		})
	}
}

// A link whose bytes are in part unknown reads "≥ N", or "—" when none are known: never a bare 0.
func TestLinkCell(t *testing.T) {
	d := analysis.DeviceLinks{}
	d.HBM = 1 << 20
	d.Partial[analysis.LinkHBM], d.Partial[analysis.LinkNVLink] = true, true
	for link, want := range map[analysis.Link]string{analysis.LinkPCIe: "0 B", analysis.LinkNVLink: "—", analysis.LinkHBM: "≥ 1 MiB"} {
		if got := linkCell(d, link); got != want {
			t.Errorf("linkCell(%v) = %q; want %q", link, got, want)
		}
	}
}
