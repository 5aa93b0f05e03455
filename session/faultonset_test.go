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

// A fault aimed at GPUs the scenario leaves idle cannot show: copy-sweep runs on GPU 0 of
// h100x8x2, so a slow host 1, or a throttled GPU 3 of host 0, is warned of in the report's
// warnings (text and JSON alike: both print them), naming the fault and its GPUs; a slow host 0,
// whose GPU 0 launches every copy, is not, nor is a fault that never began (unreachedFaults says
// so instead).
func TestFaultOnIdleGPUsWarns(t *testing.T) {
	for _, c := range []struct {
		spec, want string
	}{
		{"kind=host_slow,host=1,delay=50us", "fault kind=host_slow,host=1,delay=50µs,at=0s cannot show: GPUs 8–15 (host 1) ran nothing while it was in effect (from 0s to the end)"},
		{"kind=gpu_slow,host=0,gpu=3,factor=0.5,at=1us,for=1ms", "fault kind=gpu_slow,host=0,gpu=3,factor=0.5,at=1µs,for=1ms cannot show: GPU 3 (host 0) ran nothing while it was in effect (from 1µs for 1ms)"},
		{"kind=hang,host=1,gpu=3", "fault kind=hang,host=1,gpu=3,at=0s cannot show: GPU 11 (host 1) ran nothing while it was in effect (from 0s to the end)"},
		{"kind=host_slow,host=0,delay=50us", ""},
		{"kind=host_slow,host=1,delay=50us,at=100s", ""},
	} {
		f, err := fault.Parse(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Prepare(Config{Scenario: "copy-sweep", Topology: "h100x8x2", Seed: 1, Steps: 1, Sets: map[string]string{"max_bytes": "1MiB"}, Faults: []fault.Fault{f}})
		if err != nil {
			t.Fatal(err)
		}
		out, err := p.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, w := range p.Report(out).Warnings {
			if strings.Contains(w, "cannot show") {
				got = append(got, w)
			}
		}
		if (c.want == "") != (len(got) == 0) || (c.want != "" && (len(got) != 1 || !strings.HasPrefix(got[0], c.want))) {
			t.Errorf("%s: warnings %q; want %q", c.spec, got, c.want)
		}
	}
}

// A hang in a collective (mode in) stops its rank inside the op it hangs: nothing of the rank ends
// after it, but the fault took effect, so no "cannot show" is said of it (the stuck op, in flight
// at the run's end, is the rank's work while the fault was in effect).
// A hang before a rank's first op (mode before, early) leaves the rank no event at all: its peers'
// waits on it and the watchdog's alert show it took effect.
func TestHangInOpIsNotIdle(t *testing.T) {
	for _, tc := range []struct{ scenario, fault string }{
		{"allreduce-sweep", "kind=hang,host=1,gpu=3,mode=in,at=1.1s"},
		{"crosshost", "kind=hang,host=1,gpu=0,mode=before,at=10ms"},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			f, err := fault.Parse(tc.fault)
			if err != nil {
				t.Fatal(err)
			}
			p, err := Prepare(Config{Scenario: tc.scenario, Topology: "h100x8x2", Seed: 1, Steps: 4, Faults: []fault.Fault{f}})
			if err != nil {
				t.Fatal(err)
			}
			out, err := p.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !out.EndedByAlert() {
				t.Fatalf("the hang did not stop the run: %v", out.Ended)
			}
			for _, w := range p.Report(out).Warnings {
				if strings.Contains(w, "cannot show") {
					t.Errorf("a hang that took effect is warned of as idle: %s", w)
				}
			}
		})
	}
}
