package report

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis/diagnosis"
	"github.com/xfertop/xfertop/analysis/hostmap"
	"github.com/xfertop/xfertop/timeline"
)

// placed is fs as the analysis hands them over: each culprit rank placed by the host map of the
// job m describes (analysis/hostmap), as the diagnosis places them.
func placed(fs []diagnosis.Finding, m timeline.Meta) []diagnosis.Finding {
	hosts := hostmap.New(m)
	for i := range fs {
		fs[i].Place(hosts)
	}
	return fs
}

// A slow link's place as the JSON says it: a GPU's NIC by rank and host; a leaf switch's ports to
// the spines by the leaf, with no rank or host (null, not 0); a whole host slow by its host alone.
func TestFindingsJSONLinks(t *testing.T) {
	m := timeline.Meta{GPUsPerHost: 8}
	fs := findings(placed([]diagnosis.Finding{
		{Kind: diagnosis.SlowLink, Rank: 13, Host: 1, Link: timeline.PeakNIC},
		{Kind: diagnosis.SlowLink, Rank: -1, Host: -1, Link: timeline.LinkFabric, Port: timeline.PackPort(1, 3)},
		{Kind: diagnosis.SlowHost, Rank: -1, Host: 2, Link: -1},
	}, m))
	b, err := json.Marshal(fs)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"culprit":"host 1 GPU 5 NIC","rank":13,"host":1,"link":"nic"`,
		`"culprit":"leaf g1.r3 spine ports","rank":null,"host":null,"link":"switch_port","switch_port":"leaf g1.r3"`,
		// A whole host slow: the host, no rank.
		`"culprit":"host 2 (all its ranks alike: a host-wide cause)","rank":null,"host":2`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("findings JSON %s; want it to hold %s", b, want)
		}
	}
}

// Without the job's layout (a Flight Recorder or RAS source: GPUs per host unknown) a finding
// names its rank alone: its host is null and no "host 0" is made up.
func TestFindingsWithoutLayout(t *testing.T) {
	fs := findings(placed([]diagnosis.Finding{
		{Kind: diagnosis.DeadRank, Rank: 3, Host: 0, Link: -1},
		{Kind: diagnosis.SlowHost, Rank: 2, Host: 0, Link: -1},
		{Kind: diagnosis.SlowLink, Rank: 5, Host: 0, Link: timeline.PeakNIC},
	}, timeline.Meta{}))
	b, err := json.Marshal(fs)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"culprit":"rank 3","rank":3,"host":null`,
		`"culprit":"rank 2's host","rank":2,"host":null`,
		`"culprit":"rank 5 NIC","rank":5,"host":null`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("findings JSON %s; want it to hold %s", b, want)
		}
	}
}

// A culprit rank whose host the host map places and a source of the job named (NCCL Inspector's
// hostname, joined by rank: join.PlaceHosts) is named with it, in the culprit and in host_name; a
// rank the map does not place is named alone, its host and host_name null.
func TestFindingsHostName(t *testing.T) {
	m := timeline.Meta{Extra: map[string]string{timeline.HostsInEventsKey: "1", timeline.HostNameKey(1): "node1"}}
	hosts := hostmap.New(m)
	hosts.Add(&timeline.Event{Device: 3, Host: 1})
	fs := []diagnosis.Finding{{Kind: diagnosis.Hang, Rank: 3, Host: -1, Link: -1}, {Kind: diagnosis.Hang, Rank: 2, Host: 1, Link: -1}}
	for i := range fs {
		fs[i].Place(hosts)
	}
	out := findings(fs)
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"culprit":"rank 3 (host node1)","rank":3,"host":1,"host_name":"node1"`, `"culprit":"rank 2","rank":2,"host":null,"host_name":null`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("findings JSON %s; want it to hold %s", b, want)
		}
	}
}

// A run a deadlock ended (a rank stuck inside a collective: nothing can move) has no watchdog
// alert; its end line quotes the diagnosis's hang, so that the engine's "first: … on device 0"
// is not the one rank the user reads.
func TestEndedRootDeadlock(t *testing.T) {
	r299, h37 := int32(299), int32(37)
	slow := Finding{Kind: "slow link", Culprit: "host 1 GPU 0 NIC"}
	hang := Finding{Kind: "hang", Culprit: "rank 299 (host 37 GPU 3)", Rank: &r299, Host: &h37, Evidence: "all_reduce #25 on communicator 1: …"}
	for _, c := range []struct {
		name  string
		r     Report
		short string // "": no root
	}{
		{name: "deadlock, a hang found", r: Report{Ended: "deadlock: 6144 ops can never run; first: group on device 0 stream 2 (op 0)", Findings: []Finding{hang, slow}},
			short: "root of this hang (diagnosis): rank 299 (host 37 GPU 3)"},
		{name: "deadlock, no hang found", r: Report{Ended: "deadlock: 1 op can never run", Findings: []Finding{slow}}},
		{name: "cancelled", r: Report{Ended: "context canceled", Findings: []Finding{hang}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := c.r.EndedRoot()
			switch {
			case c.short == "" && root != nil:
				t.Errorf("EndedRoot = %+v; want none", root)
			case c.short != "" && (root == nil || root.Short() != c.short || root.Rank == nil || *root.Rank != 299):
				t.Errorf("EndedRoot = %+v; want %q, rank 299", root, c.short)
			}
		})
	}
}

// The next step of each finding is the diagnosis's (diagnosis.Finding.NextStep), in the JSON's
// next_step and the text's "next:" line alike: the report only formats it.
func TestFindingsNextStep(t *testing.T) {
	ds := []diagnosis.Finding{
		{Kind: diagnosis.SlowLink, Rank: 299, Host: 37, Link: timeline.PeakNIC, Severity: 31_100_000, CostKnown: true},
		{Kind: diagnosis.Hang, Rank: 299, Host: 37, Link: -1},
	}
	r := &Report{Findings: findings(ds)}
	b, err := json.Marshal(r.Findings)
	if err != nil {
		t.Fatal(err)
	}
	var back []struct {
		NextStep string `json:"next_step"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	findingsText(&text, r)
	for i := range ds {
		want := ds[i].NextStep()
		if want == "" || back[i].NextStep != want {
			t.Errorf("finding %d: JSON next_step %q; want the diagnosis's %q", i, back[i].NextStep, want)
		}
		if !strings.Contains(text.String(), "    next: "+want+"\n") {
			t.Errorf("finding %d: text\n%s\nwants the line \"next: %s\"", i, text.String(), want)
		}
	}
}

// A degraded link hidden behind compute says so in the JSON: hidden, a severity of 0 (no step
// time claimed) and what it would cost were nothing overlapping it; a finding that cost the step
// has neither key.
func TestFindingsJSONHidden(t *testing.T) {
	m := timeline.Meta{GPUsPerHost: 8}
	fs := findings(placed([]diagnosis.Finding{
		{Kind: diagnosis.SlowLink, Rank: 4, Host: 0, Link: timeline.PeakNIC, Hidden: true, Exposure: 34_200_000, CostKnown: true},
		{Kind: diagnosis.SlowGPU, Rank: 12, Host: 1, Link: -1, Severity: 5_000_000, CostKnown: true},
	}, m))
	b, err := json.Marshal(fs)
	if err != nil {
		t.Fatal(err)
	}
	if want := `"severity_ns":0,"hidden":true,"exposure_ns":34200000`; !strings.Contains(string(b), want) {
		t.Errorf("findings JSON %s; want it to hold %s", b, want)
	}
	if n := strings.Count(string(b), `"hidden"`); n != 1 {
		t.Errorf("findings JSON %s has %d hidden keys; want 1", b, n)
	}
	if want := "it would cost the step up to 34.2 ms were nothing overlapping it"; !strings.Contains(fs[0].NextStep, want) {
		t.Errorf("next step %q; want %q", fs[0].NextStep, want)
	}
}
