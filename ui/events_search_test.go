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
