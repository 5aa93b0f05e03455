package report

import (
	"strings"
	"testing"
)

// The export's line does not read as every step sent when steps were skipped whole: it says how
// many, and by what (the span budget, the sampling ratio), as the JSON's steps_skipped counts them.
func TestExportSkippedSteps(t *testing.T) {
	for _, c := range []struct {
		name string
		x    Export
		want string // "": no line
	}{
		{name: "every step", x: Export{StepsExported: 3, MaxRate: 10_000, SampleRatio: 1}},
		{name: "span budget", x: Export{StepsExported: 1, StepsSkipped: 2, StepsOverRate: 2, MaxRate: 10_000, SampleRatio: 1},
			want: "  2 of 3 steps skipped, not exported: 2 by the span budget (--otlp-max-rate 10000/s)\n"},
		{name: "both", x: Export{StepsExported: 5, StepsSkipped: 5, StepsOverRate: 1, MaxRate: 500, SampleRatio: 0.5},
			want: "  5 of 10 steps skipped, not exported: 1 by the span budget (--otlp-max-rate 500/s), 4 by the sampling ratio (--otlp-sample 0.5)\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := c.x
			x.Endpoint, x.Protocol, x.State = "127.0.0.1:4317", "grpc", "ok"
			var b strings.Builder
			if err := Text(&b, &Report{Source: "sim", Export: &x}); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			i := strings.Index(out, "OpenTelemetry export to")
			if i < 0 {
				t.Fatalf("no export line in\n%s", out)
			}
			rest := out[i:]
			rest = rest[strings.IndexByte(rest, '\n')+1:]
			got := ""
			if strings.HasPrefix(rest, "  ") {
				got = rest[:strings.IndexByte(rest, '\n')+1]
			}
			if got != c.want {
				t.Errorf("after the export line: %q; want %q", got, c.want)
			}
		})
	}
}
