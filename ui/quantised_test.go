package ui

import (
	"regexp"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/views/compare"
)

// quantisedTrace is a trace in whole µs (a Kineto trace's clock), as analysis's TestQuantisedRate
// builds it: a 4 MiB memset that took "4 µs" (a rate known only within bounds) and a 1 KiB one of
// "1 µs" (no upper bound: it may have taken no time), and a kernel.
func quantisedTrace() []timeline.Event {
	set := func(start, end, bytes int64) timeline.Event {
		return timeline.Event{Kind: timeline.KindMemcpy, Sub: uint8(timeline.CopySet), Device: 0, Peer: timeline.NoDevice,
			Start: start, End: end, Bytes: bytes}
	}
	return []timeline.Event{
		set(1000, 5000, 4<<20),
		set(6000, 7000, 1000),
		{Kind: timeline.KindKernel, Device: 0, Peer: timeline.NoDevice, Stream: 1, Start: 8000, End: 20000},
	}
}

// quantisedReport is the text report of quantisedTrace, as `xfertop report` writes it.
func quantisedReport(t *testing.T) (*report.Report, string) {
	t.Helper()
	a := analysis.New(timeline.Meta{})
	for _, e := range quantisedTrace() {
		a.Emit(&e)
	}
	r := report.Build(a.Result(nil), timeline.Meta{}, report.Run{})
	var b strings.Builder
	if err := report.Text(&b, r); err != nil {
		t.Fatal(err)
	}
	return r, b.String()
}

// rateAtEnd is a text report table line's last cell when it is a bounded rate ("lo–hi", "≥ lo").
var rateAtEnd = regexp.MustCompile(`(≥ )?[0-9]+\.[0-9]+(–[0-9]+\.[0-9]+)?\s*$`)

// memsetRates maps each memset line of the text report's transfers table (by its size cell:
// "all", "4 MiB", "1 KiB") to its GB/s cell.
func memsetRates(t *testing.T, txt string) map[string]string {
	t.Helper()
	out := map[string]string{}
	in := false
	for _, l := range strings.Split(txt, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) > 0 && f[0] == "kind":
			in = true
		case !in || len(f) == 0:
		case f[0] == "memset":
			out["all"] = strings.TrimSpace(rateAtEnd.FindString(l))
		case len(f) > 1 && f[0] != "GB/s":
			out[f[0]+" "+f[1]] = strings.TrimSpace(rateAtEnd.FindString(l))
		}
		if in && len(f) > 0 && f[0] == "GB/s" {
			break
		}
	}
	for k, v := range out {
		if !strings.ContainsAny(v, "–≥") {
			t.Fatalf("the text report's memset %s rate is %q, not a range:\n%s", k, v, txt)
		}
	}
	if len(out) != 3 {
		t.Fatalf("memset rates in the text report: %v; want all, 4 MiB and 1 KiB:\n%s", out, txt)
	}
	return out
}

// The console's transfers view and its compare view show a rate the trace's clock quantises as
// the text report does: the same range, never "—".
func TestQuantisedRateAsTheReport(t *testing.T) {
	rep, txt := quantisedReport(t)
	want := memsetRates(t, txt)

	w := timeline.NewWindow(0, nil)
	for _, e := range quantisedTrace() {
		w.Emit(&e)
	}
	m := sized(&fakeSource{win: w, info: SourceInfo{Name: "trace"}, status: Status{Speed: 1, Done: true}}, 160, 30)
	press(m, "3")
	scr := text(m)
	for _, size := range []string{"4 MiB", "1 KiB"} {
		found := false
		for _, l := range strings.Split(scr, "\n") {
			if strings.HasPrefix(l, "memset") && strings.Contains(l, "≤"+size) {
				found = true
				if !strings.Contains(l, want[size]) {
					t.Errorf("transfers view's memset ≤%s row %q; want the report's %q", size, l, want[size])
				}
			}
		}
		if !found {
			t.Errorf("no memset ≤%s row in the transfers view:\n%s", size, scr)
		}
	}

	d := compare.Data{Cmp: report.Compare(rep, rep, "A", "B"), Runs: [2]compare.Run{{Label: "A"}, {Label: "B"}}}
	var ct strings.Builder
	if err := report.CompareText(&ct, d.Cmp); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"compare view": text(sizedCompare(d, 160, 40)), "compare text": ct.String()} {
		found := false
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "memset GB/s") {
				found = true
				if strings.Count(l, want["all"]) != 2 {
					t.Errorf("%s's memset line %q; want the report's %q for A and for B", name, l, want["all"])
				}
			}
		}
		if !found {
			t.Errorf("no memset GB/s line in the %s:\n%s", name, out)
		}
	}
}
