//go:build cuda

package session

import (
	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/cuda"
	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/timeline"

	"gorgonia.org/cu"
)

// newCUDA opens the machine's GPUs for the topology's ranks: one rank per GPU, or with cfg.Fit rank r
// on GPU r mod n.
func newCUDA(cfg Config, topo engine.Topology, opts engine.Options, faults []fault.Fault, sink timeline.Sink, strs *timeline.Strings) (engine.Backend, string, error) {
	n, err := cu.NumDevices()
	if err != nil {
		return nil, "", err
	}
	fit, err := engine.NewFit(topo.Devices(), n, cfg.Fit)
	if err != nil {
		return nil, "", err
	}
	b, err := cuda.New(cuda.Config{Topology: topo, Fit: fit, NCCLAlgo: opts.NCCLAlgo, NCCLProto: opts.NCCLProto, Faults: faults}, sink, strs)
	if err != nil {
		return nil, "", err
	}
	return b, fit.String(), nil
}
