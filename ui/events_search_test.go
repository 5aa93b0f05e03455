package ui

import (
	"strings"
	"testing"
)

// The log's `/` searches every event the console holds, not only the last agg.MaxLog: at 4,096
// GPUs the first kernel of GPU 5 (slow, so among the first to end) is long out of the last 5,000,
// and the search still finds it beside its second.
func TestEventsSearchFindsOlderEvents(t *testing.T) {
	m := sized(clusterSource(t, 4096), 160, 40)
	press(m, "7", "/", "d", "e", "v", "space", "5", "space", "space", "enter")
	got := text(m)
	var found []string
	for _, l := range strings.Split(got, "\n") {
		if strings.Contains(l, "kernel") && strings.Contains(l, "dev 5   ") {
			found = append(found, l)
		}
	}
	if len(found) != 2 || !strings.Contains(got, "2 matches in all ") {
		t.Fatalf("search for GPU 5 found %d kernels; want 2 (its first ended before the last 5,000 events):\n%s", len(found), got)
	}
}

// esc clears a kept search in the events view, as in every other list, and its help says so: a
// user who pressed esc and then / typed onto the old text ("/stepstep") and searched 9.85 M events
// for nothing.
func TestEventsEscClearsSearch(t *testing.T) {
	m := sized(scenarioSource(t, "pipeline", 2, ""), 160, 40)
	press(m, "7", "/", "s", "t", "e", "p", "enter")
	if got := text(m); !strings.Contains(got, "/step") || !strings.Contains(got, "esc clear filter") {
		t.Fatalf("the kept search is not shown, or its help lacks esc:\n%s", got)
	}
	press(m, "esc")
	if got := text(m); strings.Contains(got, "/step") {
		t.Errorf("esc did not clear the search:\n%s", got)
	}
	press(m, "/", "k")
	if got := text(m); !strings.Contains(got, "/k") || strings.Contains(got, "/stepk") {
		t.Errorf("after esc, / starts a new search; got:\n%s", got)
	}
}
