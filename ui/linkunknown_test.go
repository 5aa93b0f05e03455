package ui

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/session"
)

// A link whose figure the report gives as a lower bound or unknown (lower_bound_links; "≥" or "—"
// in its table) is unknown in the console too: the overview's column reads "—", not "0.0 0%", and
// the cluster view's heatmap of that link is "?" with no device in its worst list. On the
// simulator that is HBM on every device (kernels' memory traffic is in no source).
func TestLinkUnknownAsInTheReport(t *testing.T) {
	// The same run headless (window 0), for the report.
	p, err := session.Prepare(session.Config{Scenario: "llm-train", Steps: 2, Seed: 1, Topology: "h100x8x4"})
	if err != nil {
		t.Fatal(err)
	}
	o, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rep := p.Report(o)
	if len(rep.Links.Devices) < 8 {
		t.Fatalf("the report has %d devices' links", len(rep.Links.Devices))
	}
	src := scenarioSource(t, "llm-train", 2, "h100x8x4")
	m := sized(src, 160, 45)
	lines := strings.Split(text(m), "\n")
	head := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "gpu ") })
	if head < 0 {
		t.Fatalf("no device table:\n%s", text(m))
	}
	end := len([]rune(lines[head][:strings.Index(lines[head], "HBM")+len("HBM")]))
	for _, d := range rep.Links.Devices[:8] {
		row := []rune(lines[head+1+int(d.Device)])
		cell := strings.TrimSpace(string(row[end-6 : end]))
		unknown := slices.Contains(d.LowerBound, "HBM")
		if !unknown {
			t.Fatalf("device %d: the report's HBM is %d bytes, not a lower bound; the simulator's is", d.Device, d.HBM)
		}
		if cell != "—" {
			t.Errorf("device %d: overview HBM cell %q; the report's is unknown (%v): want —", d.Device, cell, d.LowerBound)
		}
	}
	press(m, "8", ":", "l", "i", "n", "k", " ", "h", "b", "m", "enter")
	view := text(m)
	if !strings.Contains(view, "metric: HBM % of peak") {
		t.Fatalf(":link hbm did not show HBM:\n%s", view)
	}
	if strings.Contains(view, "0.0%") || !strings.Contains(view, "????????") {
		t.Errorf("the HBM heatmap shows a figure where the report's is unknown:\n%s", view)
	}
}
