package whatif

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/xfertop/xfertop/whatif/synth"
)

var (
	synthDir   = flag.String("synth-dir", "", "TestWriteSynth writes a synthetic trace per rank here (rank-N.json)")
	synthSteps = flag.Int("synth-steps", 100, "steps of the synthetic trace TestWriteSynth writes")
	synthRanks = flag.Int("synth-ranks", 1, "ranks of the synthetic trace TestWriteSynth writes")
	synthOps   = flag.Int("synth-ops", 1000, "kernels a step of the synthetic trace TestWriteSynth writes")
)

// TestWriteSynth writes a synthetic trace to try the command on (skipped without -synth-dir):
//
//	go test ./whatif -run TestWriteSynth -synth-dir /tmp/big -synth-steps 4000 -synth-ops 1000
func TestWriteSynth(t *testing.T) {
	if *synthDir == "" {
		t.Skip("no -synth-dir")
	}
	var ws []io.Writer
	for r := range *synthRanks {
		f, err := os.Create(filepath.Join(*synthDir, fmt.Sprintf("rank-%d.json", r)))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		ws = append(ws, f)
	}
	if err := synth.Write(ws, synth.Shape{Ranks: *synthRanks, Steps: *synthSteps, Ops: *synthOps, Seed: 1}); err != nil {
		t.Fatal(err)
	}
}
