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
		// --fit on one GPU: the cross-host sends were copies in HBM, not 1270 GB/s of a 50 GB/s NIC.
		{"emulated: no rate of the topology, the copies' own named", analysis.Transfers{Count: 180, Bytes: 180 << 26, ByKind: map[string]analysis.Stats{
			"send": {Count: 180, Bytes: 180 << 26, BusyNs: 9506152, Emulated: 180, EmulatedGBps: f(1270.71)},
			"recv": {Count: 180, Bytes: 180 << 26, BusyNs: 4327930247, Emulated: 180},
		}}, []string{"send: 180 of 180 emulated (--fit", "at 1270.71 GB/s", "on no link of the topology", "recv: 180 of 180 emulated", "no rate of its own"},
			[]string{"2.79"}},
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

// An emulated collective (--fit put its ranks on shared GPUs) keeps the scenario's op and ranks,
// shows no algbw or busbw ("—"), and says why under the table.
func TestEmulatedCollectivesText(t *testing.T) {
	p50 := int64(5249)
	tests := []struct {
		name    string
		row     analysis.Collective
		want    []string
		wantNot []string
	}{
		{"emulated", analysis.Collective{Op: "all_reduce", Ranks: 8, SizeClass: 1 << 30, Bytes: 1 << 30, Count: 10, TimeNs: 68000, P50Ns: &p50, Emulated: true},
			[]string{"all_reduce      8    1 GiB     10", "—           —    emulated", "emulated: --fit put some of the collective's ranks on one GPU", "no algbw or busbw"},
			nil},
		{"real", analysis.Collective{Op: "all_reduce", Ranks: 8, SizeClass: 1 << 30, Bytes: 1 << 30, Count: 10, TimeNs: 68000, P50Ns: &p50},
			[]string{"all_reduce"}, []string{"emulated"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			collectivesText(&b, &Report{Collectives: []analysis.Collective{tc.row}})
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

// With no finding, a run whose ranks shared GPUs (--fit: emulated ops) says that no slow link, GPU
// or host is named there, rather than that none stood out.
func TestFindingsNoneEmulated(t *testing.T) {
	tests := []struct {
		name string
		r    Report
		want string
	}{
		{"ranks on GPUs of their own", Report{}, "no rank, GPU, host or link stood out"},
		{"ranks sharing GPUs", Report{Links: analysis.Links{EmulatedBytes: 1 << 20}}, "ranks shared GPUs under --fit, so no slow link, GPU or host is named"},
		{"emulated collectives only", Report{Collectives: []analysis.Collective{{Op: "all_reduce", Ranks: 8, Emulated: true}}}, "ranks shared GPUs under --fit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			findingsText(&b, &tc.r)
			if !strings.Contains(b.String(), tc.want) {
				t.Errorf("findings text %q; want %q in it", b.String(), tc.want)
			}
		})
	}
}
