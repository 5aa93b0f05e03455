package ui

import (
	"context"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/session"
)

// `/` in the findings view filters the findings (typing a rank's number does not switch views);
// enter then jumps to the one shown.
func TestFindingsFilter(t *testing.T) {
	var fs []fault.Fault
	for _, sp := range []string{"kind=gpu_slow,host=0,gpu=5,factor=0.5", "kind=gpu_slow,host=2,gpu=4,factor=0.5"} {
		f, err := fault.Parse(sp)
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, f)
	}
	p, err := session.Prepare(session.Config{Scenario: "llm-train", Topology: "h100x8x2", Hosts: 4, Steps: 4, Seed: 1, Window: 1 << 22, Faults: fs})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := sized(&fakeSource{win: p, info: SourceInfo{Name: "llm-train", Meta: p.Meta()}, status: Status{Speed: 1, Done: true}}, 160, 40)
	press(m, "9")
	if got := text(m); !strings.Contains(got, "rank 5 (host 0 GPU 5)") || !strings.Contains(got, "rank 20 (host 2 GPU 4)") {
		t.Fatalf("findings view without a filter:\n%s", got)
	}
	press(m, "/", "2", "0", "enter")
	_, got, _ := strings.Cut(text(m), "Findings (") // the view, under the header's alert
	if m.Tab() != TabFindings || strings.Contains(got, "rank 5 (host 0 GPU 5)") || !strings.Contains(got, "rank 20 (host 2 GPU 4)") || !strings.Contains(got, "1 of 2 findings") {
		t.Fatalf("/20 in the findings view: tab %d:\n%s", m.Tab(), got)
	}
	cmd := press(m, "enter")
	if cmd == nil {
		t.Fatal("enter on the filtered finding asked for no jump")
	}
	if j, ok := cmd().(JumpToMsg); !ok || j.Device != 20 {
		t.Fatalf("enter on the filtered finding jumps to %+v; want device 20", cmd())
	}
}
