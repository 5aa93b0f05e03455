package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/analysis/diagnosis"
	"github.com/xfertop/xfertop/timeline"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// The report's hosts carry the names the ranks gave their hosts, their numbers staying the key:
// an attach-like job (each event's host as its rank named it) whose rank 1 is on host 0, named
// node-b, rank 0 on host 1, node-a, rank 2 on host 2, which no source named (host_name null, not
// made up), and rank 3, which ran nothing (host unknown: both null). A finding on rank 0 names
// node-a in its culprit and host_name. Before, hosts had no host_name and the culprit said
// "rank 0 (host 1)".
func TestHostsJSON(t *testing.T) {
	meta := timeline.Meta{Source: "attach", Backend: "nccl", Topology: "unknown", Devices: 4,
		Extra: map[string]string{timeline.HostsInEventsKey: "1", timeline.HostNameKey(0): "node-b", timeline.HostNameKey(1): "node-a"}}
	an := analysis.New(meta)
	for d, h := range []uint16{1, 0, 2} {
		an.Emit(&timeline.Event{Kind: timeline.KindKernel, Device: int32(d), Peer: -1, Host: h, Stream: 1, Queued: -1, Start: 0, End: 1_000_000})
	}
	res := an.Result(timeline.NewStrings())
	f := diagnosis.Finding{Kind: diagnosis.SlowGPU, Rank: 0, Link: -1, Confidence: 1, Evidence: "hand-made"}
	f.Place(res.Hosts)
	res.Findings = []diagnosis.Finding{f}
	rep := Build(res, meta, Run{})
	type culprit struct {
		Culprit  string  `json:"culprit"`
		Host     *int32  `json:"host"`
		HostName *string `json:"host_name"`
	}
	out := struct {
		Hosts     []DeviceHost `json:"hosts"`
		HostsFrom string       `json:"hosts_from"`
		Findings  []culprit    `json:"findings"`
	}{Hosts: rep.Hosts, HostsFrom: rep.HostsFrom}
	for _, f := range rep.Findings {
		out.Findings = append(out.Findings, culprit{f.Culprit, f.Host, f.HostName})
	}
	got, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "hosts.json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run TestHostsJSON -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("report hosts:\n%s\nwant (%s):\n%s", got, path, want)
	}
}
