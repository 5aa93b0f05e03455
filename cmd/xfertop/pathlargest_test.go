package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/report"
)

// analyze --critical-path names the path's largest contributors by rank, kind and link, in the
// text and the JSON: a pipeline whose stage on host 1 receives over a NIC at 0.2 of its rate has
// that rank's receives over host 1 NIC 0 on its path, and the collectives of an llm-train job are
// named by communicator, not by the rank the path happened to go through. Before, the report
// gave only the path's split into compute and communication.
func TestAnalyzeCriticalPathNamesItsLargest(t *testing.T) {
	dir := t.TempDir()
	pipe, llm := filepath.Join(dir, "pipe.xfr"), filepath.Join(dir, "llm.xfr")
	for _, args := range [][]string{
		{"run", "--headless", "--scenario", "pipeline", "--steps", "4", "--fault", "kind=nic_slow,host=1,nic=0,factor=0.2", "--record", pipe},
		{"run", "--headless", "--scenario", "llm-train", "--topology", "h100x8x4", "--hosts", "16", "--steps", "3", "--fault", "kind=nic_slow,host=5,nic=3,factor=0.3,at=1.1s", "--record", llm},
	} {
		if code, _, errs := runCLI(t, args...); code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
	}
	largest := func(rec string) ([]report.PathContributor, string) {
		code, out, errs := runCLI(t, "analyze", "--critical-path", "--json", rec)
		if code != exitOK {
			t.Fatalf("analyze --critical-path --json %s: exit %d: %s", rec, code, errs)
		}
		var r report.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if r.CriticalPath == nil || len(r.CriticalPath.Largest) == 0 {
			t.Fatalf("analyze --critical-path --json %s: no critical_path.largest in %s", rec, out)
		}
		_, text, _ := runCLI(t, "analyze", "--critical-path", rec)
		return r.CriticalPath.Largest, text
	}
	got, text := largest(pipe)
	found := false
	for _, c := range got {
		if c.Kind == "recv" && c.Link == "host 1 NIC 0" && c.Rank != nil && *c.Rank == 8 && c.Category == "communication" && c.Ns > 1e6 {
			found = true
		}
	}
	if !found {
		t.Errorf("pipeline, host 1 NIC 0 at 0.2: largest on the critical path %+v; want rank 8's receives over host 1 NIC 0", got)
	}
	if !strings.Contains(text, "  largest on it, per step: ") || !strings.Contains(text, "in rank 8's receives over host 1 NIC 0") {
		t.Errorf("analyze --critical-path: no line naming rank 8's receives over host 1 NIC 0 in\n%s", text)
	}
	got, _ = largest(llm)
	colls := 0
	for _, c := range got {
		if c.Kind == "all_gather" || c.Kind == "reduce_scatter" {
			colls++
			if c.Rank != nil || c.Comm == nil || !strings.Contains(c.What, " on communicator ") {
				t.Errorf("llm-train: collective contributor %+v: want it named by its communicator, with no rank", c)
			}
			// Which ranks and hosts to look at: the communicator's members, from its events.
			if len(c.Ranks) < 2 || !slices.IsSorted(c.Ranks) || !strings.Contains(c.What, fmt.Sprintf("ranks %d, %d", c.Ranks[0], c.Ranks[1])) ||
				!strings.Contains(c.What, " on host") {
				t.Errorf("llm-train: collective contributor %+v: want its ranks and hosts named", c)
			}
		}
	}
	if colls == 0 {
		t.Errorf("llm-train, 128 GPUs, a NIC at 0.3: no collective among the critical path's largest %+v", got)
	}
}
