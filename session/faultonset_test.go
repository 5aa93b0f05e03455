package session

import (
	"context"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/engine/fault"
)

// A fault whose onset comes after the run's end never happened: the report warns so (text and
// JSON warnings) instead of listing it as injected beside a healthy verdict; one that began does
// not get the warning.
func TestFaultAfterTheRunWarns(t *testing.T) {
	for _, c := range []struct {
		spec string
		warn bool
	}{
		{"kind=gpu_slow,host=0,gpu=1,factor=0.5,at=100s", true},
		{"kind=gpu_slow,host=0,gpu=1,factor=0.5,at=1ms", false},
	} {
		f, err := fault.Parse(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Prepare(Config{Scenario: "llm-train", Topology: "h100x8x2", Seed: 1, Steps: 2, Faults: []fault.Fault{f}})
		if err != nil {
			t.Fatal(err)
		}
		out, err := p.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		rep := p.Report(out)
		var got []string
		for _, w := range rep.Warnings {
			if strings.Contains(w, "never began") {
				got = append(got, w)
			}
		}
		if c.warn != (len(got) == 1) || (c.warn && !strings.Contains(got[0], "at=100s") && !strings.Contains(got[0], "1m40s")) {
			t.Errorf("%s: warnings %q; want a warning: %v", c.spec, rep.Warnings, c.warn)
		}
	}
}
