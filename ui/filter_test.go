package ui

import (
	"strings"
	"testing"
)

// typeFilter opens a view's filter, types s and keeps it (enter).
func typeFilter(m *Model, s string) {
	press(m, "/")
	for _, r := range s {
		press(m, string(r))
	}
	press(m, "enter")
}

// `/` filters every list; the filter line says how many rows it keeps, and esc clears it.
func TestFilterInEveryList(t *testing.T) {
	big := clusterSource(t, 256)
	pipe := scenarioSource(t, "pipeline", 2, "")
	strag := scenarioSource(t, "straggler", 2, "")
	tests := []struct {
		name   string
		src    Source
		keys   []string // to reach the list
		filter string
		has    []string
		not    []string
	}{
		{"overview", big, []string{"1"}, "h3", []string{"/h3", "8 of 256 devices", "\n24 ", "\n31 "}, []string{"\n23 ", "\n250 ", "▸h"}},
		// A host's name is that host alone, not every host whose name begins so (h10–h19).
		{"overview host h1", big, []string{"1"}, "h1", []string{"8 of 256 devices", "\n8 ", "\n15 "}, []string{"\n80 ", "\n16 "}},
		{"timeline host h1", big, []string{"2"}, "h1", []string{"▾ device 8\n", "▾ device 15\n"}, []string{"device 80", "device 16\n"}},
		{"timeline", big, []string{"2"}, "device 77", []string{"device 77"}, []string{"device 76", "device 78"}},
		{"idle", pipe, []string{"5"}, "peer", []string{"peer_wait", "rows"}, []string{"host_wait    "}},
		{"comms", pipe, []string{"6"}, "0-7", []string{"of"}, nil},
		{"barriers", strag, []string{"4"}, "rank 3", []string{"rank 3 ", "1 of"}, []string{"rank 2 "}},
		{"cluster GPUs", big, []string{"8", "j", "j", "j", "enter"}, "gpu 25", []string{"1 of 8 GPUs", "\n25 "}, []string{"\n24 "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := sized(tt.src, 160, 45)
			press(m, tt.keys...)
			typeFilter(m, tt.filter)
			got := text(m)
			for _, s := range tt.has {
				if !strings.Contains(got, s) {
					t.Errorf("filtered by %q, the view lacks %q:\n%s", tt.filter, s, got)
				}
			}
			for _, s := range tt.not {
				if strings.Contains(got, s) {
					t.Errorf("filtered by %q, the view still shows %q:\n%s", tt.filter, s, got)
				}
			}
			press(m, "esc")
			if got := text(m); strings.Contains(got, "/"+tt.filter) {
				t.Errorf("esc did not clear the filter:\n%s", got)
			}
		})
	}
}
