package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/xfertop/xfertop/report"
)

// exportFailure says how an OTLP export failed, "" when it did not (or there was none): spans or
// metric points that never reached the collector, or a last export that failed.
func exportFailure(x *report.Export) string {
	if x == nil || x.SpansDropped == 0 && x.MetricPointsDropped == 0 && !strings.HasPrefix(x.State, "failing") {
		return ""
	}
	state := x.State
	if x.DropReason != "" && !strings.HasPrefix(state, "failing") {
		// The export recovered: its state alone ("ok") would not say why spans were lost.
		state += "; spans last dropped because: " + x.DropReason
	}
	if x.MetricPoints == 0 {
		// Points are counted when a collection is exported: none counted is not "0 of 0 lost"
		// but no collection exported (the last, the run's whole report, given up with the spans).
		return fmt.Sprintf("the OTLP export to %s failed: %d of %d spans did not reach the collector, and no metric point was exported (%s)",
			x.Endpoint, x.SpansDropped, x.SpansBuilt, state)
	}
	return fmt.Sprintf("the OTLP export to %s failed: %d of %d spans and %d of %d metric points did not reach the collector (%s)",
		x.Endpoint, x.SpansDropped, x.SpansBuilt, x.MetricPointsDropped, x.MetricPoints, state)
}

// check ends a command that exported over OTLP. Telemetry is best effort, as in OpenTelemetry's
// SDKs, so by default a failed export does not fail the run whose report was printed: it is a
// warning on standard error, after the report, where it is not cut off as in the header. With
// --otlp-required (a pipeline that must deliver its spans) it is the command's error, status 5,
// which a script tells apart from a failed run.
func (f *otlpFlags) check(x *report.Export, stderr io.Writer) error {
	msg := exportFailure(x)
	switch {
	case msg == "":
		return nil
	case f.required:
		return &exitError{code: exitExport, err: errors.New(msg)}
	}
	fmt.Fprintf(stderr, "xfertop: warning: %s (--otlp-required makes this exit status 5)\n", msg)
	return nil
}
