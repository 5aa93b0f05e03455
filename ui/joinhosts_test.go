package ui

import (
	"maps"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/importers"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/views/cluster"
)

// The job of importers/testdata/joint: its Flight Recorder dumps, its NCCL Inspector logs (ranks
// 0–1 on node0, 2–3 on node1) and its NCCL RAS report (rank 3 dead).
const (
	jointFR        = "../importers/flightrecorder/testdata/hang"
	jointInspector = "../importers/testdata/joint/inspector"
	jointRAS       = "../importers/ras/testdata/hang.json"
)

// A job's sources joined by rank hand the hosts they name (Inspector's hostname, RAS's host) to
// the one host map, as Inspector's logs and RAS's report read alone do: the report's hosts[], the findings' host and the console's Cluster view say
// the same host of each rank (rank 3, the culprit, on node1). Before, the join named the
// culprit's host through a description key of its own: the finding read "rank 3 (host node1)"
// while the report's hosts and the Cluster view knew no host at all.
func TestJoinedSourcesHosts(t *testing.T) {
	want := map[int32]string{0: "node0", 1: "node0", 2: "node1", 3: "node1"}
	for _, c := range []struct {
		name    string
		paths   []string
		culprit bool    // the sources find rank 3 the culprit
		none    []int32 // ranks of no events: the map does not place them, though RAS names their hosts
	}{
		{"dumps+inspector", []string{jointFR, jointInspector}, true, nil},
		{"dumps+ras", []string{jointFR, jointRAS}, true, nil},
		{"inspector+ras", []string{jointInspector, jointRAS}, true, nil},
		{"dumps+inspector+ras", []string{jointFR, jointInspector, jointRAS}, true, nil},
		{"inspector", []string{jointInspector}, false, nil},
		{"ras", []string{jointRAS}, true, []int32{0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := maps.Clone(want)
			for _, r := range c.none {
				want[r] = "?" // unknown, in the Cluster view and the report (no host_name) alike
			}
			var col importers.Collect
			if _, err := importers.Stream(c.paths, importers.Options{}, &col); err != nil {
				t.Fatal(err)
			}
			meta, strs := col.Header.Meta, col.Header.Strings
			an := analysis.New(meta)
			win := timeline.NewWindow(1<<20, strs)
			for i := range col.All {
				an.Emit(&col.All[i])
				win.Emit(&col.All[i])
			}
			rep := report.Build(an.Result(strs), meta, report.Run{})
			if rep.HostsFrom != "events" {
				t.Errorf("report hosts_from %q; want events (the hosts the sources named)", rep.HostsFrom)
			}
			got := map[int32]string{}
			for _, h := range rep.Hosts {
				if h.HostName != nil {
					got[h.Device] = *h.HostName
				}
			}
			for r, name := range want {
				if got[r] != strings.TrimPrefix(name, "?") {
					t.Errorf("report hosts %v; want rank %d on %s", got, r, name)
				}
			}
			var culprit *report.Finding
			for i := range rep.Findings {
				if f := &rep.Findings[i]; f.Rank != nil && *f.Rank == 3 {
					culprit = f
					break
				}
			}
			switch {
			case culprit == nil && c.culprit:
				t.Fatalf("report findings %+v; want one of rank 3", rep.Findings)
			case culprit == nil:
			case culprit.Host == nil || culprit.HostName == nil || *culprit.HostName != "node1" || !strings.Contains(culprit.Culprit, "rank 3 (host node1)"):
				t.Errorf("finding: culprit %q, host %v, host_name %v; want rank 3 on its host named node1", culprit.Culprit, culprit.Host, culprit.HostName)
			}
			for _, h := range rep.Hosts {
				if culprit != nil && h.Device == 3 && (h.Host == nil || culprit.Host == nil || *h.Host != *culprit.Host) {
					t.Errorf("report places rank 3 on host %v, its finding on %v; want one host", h.Host, culprit.Host)
				}
			}

			m := sized(&fakeSource{win: win, info: SourceInfo{Name: "joined", Meta: meta}, status: Status{Speed: 1, Done: true}}, 120, 30)
			press(m, "8")
			cv := paneAt[*cluster.Model](m, TabCluster)
			for r, name := range want {
				if h, ok := cv.HostOf(r); !ok || h != name {
					t.Errorf("cluster view lists rank %d under host %q (%v); want %s", r, h, ok, name)
				}
			}
			if out := ansi.Strip(m.View().Content); !strings.Contains(out, "node0") || !strings.Contains(out, "node1") {
				t.Errorf("cluster view:\n%s\nwant hosts node0 and node1", out)
			}
		})
	}
}
