//go:build !cuda

package session

import (
	"fmt"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/timeline"
)

// newCUDA is unavailable in a default build: the cuda backend needs the CUDA driver API at build
// time (README, "On a GPU machine").
func newCUDA(Config, engine.Topology, engine.Options, []fault.Fault, timeline.Sink, *timeline.Strings) (engine.Backend, string, error) {
	return nil, "", fmt.Errorf(`backend "cuda" is not available in this build: build with "go build -tags cuda ./cmd/xfertop" (README, "On a GPU machine")`)
}
