package report

import (
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/timeline"
)

// A source that does not describe its run (an OTLP sender without xfertop.meta.*) reads as
// unknown, its devices counted from what ran, and is not said to have chosen a detail it never
// named.
func TestUnknownMetaReadsAsUnknown(t *testing.T) {
	res := &analysis.Result{Events: 5, Breakdown: analysis.Breakdown{Devices: []analysis.DeviceTime{{Device: 0}}}}
	recv := &Receive{Listen: "127.0.0.1:4318", Spans: 5, Hosts: []ReceiveHost{{Name: "h0", Session: "abc", Spans: 5}}}
	r := Build(res, timeline.Meta{Source: "otlp h0"}, Run{Receive: recv, Partial: []string{"events: only the spans' events"}})
	if r.Devices != 1 {
		t.Errorf("Devices = %d; want 1 (the device that ran)", r.Devices)
	}
	var b strings.Builder
	if err := Text(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"backend unknown, topology unknown (1 device)", "h0 (session abc, detail unknown)", "detail unknown"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"backend ,", "detail )", "exported with --otlp-detail spans"} {
		if strings.Contains(out, bad) {
			t.Errorf("report says %q:\n%s", bad, out)
		}
	}
	// A sender that said spans is still told so.
	recv.Hosts[0].Detail = "spans"
	b.Reset()
	if err := Text(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "exported with --otlp-detail spans") {
		t.Errorf("a sender that said spans is not named so:\n%s", b.String())
	}
}
