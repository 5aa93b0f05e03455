package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/session"
	"github.com/xfertop/xfertop/timeline"
)

// A finding about a pipeline's transfer names it in the workload's terms (its size, its ranks and
// their streams, the label the scenario gave it) beside its op id, which `/op N` finds in the
// events view; the console's findings view, the text report and the JSON say it alike, from the
// diagnosis's one finding.
func TestFindingsNameTransferAsReport(t *testing.T) {
	f, err := fault.Parse("kind=hang,host=1,gpu=0,coll=recv,mode=in,at=1.1s")
	if err != nil {
		t.Fatal(err)
	}
	// The same run twice (one seed): headless for the report, into a window for the console.
	run := func(window int) (*session.Prepared, session.Outcome) {
		p, err := session.Prepare(session.Config{Scenario: "pipeline", Topology: "h100x8x2", Steps: 4, Seed: 1, Window: window, Faults: []fault.Fault{f}})
		if err != nil {
			t.Fatal(err)
		}
		out, err := p.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return p, out
	}
	headless, out := run(0)
	r := headless.Report(out)
	if len(r.Findings) == 0 {
		t.Fatal("no finding")
	}
	ev := r.Findings[0].Evidence
	const want = `64 MiB from rank 4 (stream 8) to rank 8 (stream 3), "stage 1→2 microbatch 8" (send/recv op 26 on communicator 2): `
	if !strings.HasPrefix(ev, want) {
		t.Fatalf("the report's finding says %q; want it to begin %q", ev, want)
	}
	var txt bytes.Buffer
	if err := report.Text(&txt, r); err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Findings []struct{ Evidence string }
	}
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), ev) || len(back.Findings) == 0 || back.Findings[0].Evidence != ev {
		t.Errorf("the text report or the JSON differ from the finding %q", ev)
	}
	p, _ := run(1 << 22)
	// The console sees what is still in flight, as it does live: the ops stuck inside the hang.
	m := sized(inFlightSource{&fakeSource{win: p, info: SourceInfo{Name: "pipeline", Meta: p.Meta()}, status: Status{Speed: 1, Done: true}}, p}, 400, 40)
	press(m, "9")
	if got := text(m); !strings.Contains(got, want) {
		t.Errorf("the findings view does not say %q:\n%s", want, got)
	}
}

// inFlightSource is a fakeSource whose ops in flight are a run's.
type inFlightSource struct {
	*fakeSource
	run InFlighter
}

func (s inFlightSource) InFlight(dst []timeline.Event) []timeline.Event { return s.run.InFlight(dst) }
