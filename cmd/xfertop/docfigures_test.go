package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/units"
)

// The figures the documentation quotes are the ones the commands print today: each row runs the
// command the text describes and looks for the figure, formatted as the text writes it, in the
// sentence that quotes it. A change to the simulator that moves a figure fails here until the
// text says what the simulator now does.
func TestDocumentedFigures(t *testing.T) {
	p50 := func(r reportJSON) string { return units.DurP(r.Steps.P50Ns) }
	busbw1GiB := func(r reportJSON) string {
		for _, c := range r.Collectives {
			if c.Bytes == 1<<30 {
				return fmt.Sprintf("%.0f", math.Round(c.BusbwGbps))
			}
		}
		return "(no 1 GiB collective)"
	}
	tests := []struct {
		doc, text string // text holds %s for each figure, in order
		figure    func(reportJSON) string
		runs      [][]string
	}{
		{"README.md", "cut the step (p50) from %s to %s", p50, [][]string{
			{"--scenario", "pipeline", "--set", "d2d_priority=normal"}, {"--scenario", "pipeline"}}},
		{"README.md", "reaches %s GB/s busbw, the ring (`--set nccl_algo=ring`) %s GB/s", busbw1GiB, [][]string{
			{"--scenario", "allreduce-sweep"}, {"--scenario", "allreduce-sweep", "--set", "nccl_algo=ring"}}},
		{"docs/scenarios.md", "| step p50 | %s | %s (", p50, [][]string{
			{"--scenario", "tp-overlap", "--set", "overlap=off"}, {"--scenario", "tp-overlap", "--set", "overlap=ring"}}},
		{"docs/scenarios.md", "| step p50 (`overlap=off gemm=500ns shard_bytes=4KiB`) | %s | %s |", p50, [][]string{
			{"--scenario", "tp-overlap", "--set", "overlap=off", "--set", "gemm=500ns", "--set", "shard_bytes=4KiB", "--set", "graphs=off"},
			{"--scenario", "tp-overlap", "--set", "overlap=off", "--set", "gemm=500ns", "--set", "shard_bytes=4KiB", "--set", "graphs=on"}}},
		{"scenario/builtin/tp-overlap.yaml", "(simulator: %s per step\n  off, %s ring", p50, [][]string{
			{"--scenario", "tp-overlap", "--set", "overlap=off"}, {"--scenario", "tp-overlap", "--set", "overlap=ring"}}},
	}
	for _, tt := range tests {
		t.Run(tt.doc+" "+strings.Fields(tt.text)[0], func(t *testing.T) {
			doc, err := os.ReadFile(filepath.Join("..", "..", tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			var figs []any
			for _, args := range tt.runs {
				code, out, errs := runCLI(t, append([]string{"run", "--headless", "--json"}, args...)...)
				if code != exitOK {
					t.Fatalf("%v: exit %d: %s", args, code, errs)
				}
				var r reportJSON
				if err := json.Unmarshal([]byte(out), &r); err != nil {
					t.Fatalf("%v: %v", args, err)
				}
				figs = append(figs, tt.figure(r))
			}
			if want := fmt.Sprintf(tt.text, figs...); !strings.Contains(string(doc), want) {
				t.Errorf("%s does not say %q, which is what the commands print now", tt.doc, want)
			}
		})
	}
}

// reportJSON is the part of the JSON report the documented figures come from.
type reportJSON struct {
	Steps struct {
		P50Ns *int64 `json:"p50_ns"`
	} `json:"steps"`
	Collectives []struct {
		Bytes     int64   `json:"bytes"`
		BusbwGbps float64 `json:"busbw_gbps"`
	} `json:"collectives"`
}
