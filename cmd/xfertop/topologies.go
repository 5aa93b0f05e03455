package main

import (
	"fmt"
	"io"

	"github.com/xfertop/xfertop/engine/topology"
)

// topologiesCmd lists the built-in topologies, a line each, or prints one's file for a user to
// copy and edit (then run it with --topology FILE).
func topologiesCmd(args []string, stdout io.Writer) error {
	if isHelp(args) {
		fmt.Fprint(stdout, "Usage: xfertop topologies [NAME]\n\nLists the built-in topologies (hosts × GPUs, GPU model, interconnect, NVLS, NICs), or prints\nNAME's file: copy it, edit it and run it with --topology FILE (see docs/topologies.md).\nAny size without a file: xfertop run --topology h100x8x2 --hosts 512.\n"+exitHelp)
		return nil
	}
	if f := undefinedFlag(args); f != "" {
		return usageError("flag provided but not defined: %s (usage: xfertop topologies [NAME])", f)
	}
	switch len(args) {
	case 0:
		for _, name := range topology.Names() {
			t, err := topology.Builtin(name)
			if err != nil {
				return failure(fmt.Errorf("built-in topology %s: %w", name, err))
			}
			def := ""
			if name == topology.Default {
				def = " (default)"
			}
			fmt.Fprintf(stdout, "%-9s %s%s\n", name, topology.Summary(t), def)
		}
		fmt.Fprint(stdout, "\nAny number of hosts of a kind: xfertop run --topology h100x8x2 --hosts 512 (up to 1024 hosts, 8192 GPUs).\n"+
			"A network fabric (rail-optimized leaf/spine, oversubscription) or other hardware: xfertop topologies NAME > my.yaml,\n"+
			"edit it, and run --topology my.yaml (docs/topologies.md).\n")
		return nil
	case 1:
		src, err := topology.Source(args[0])
		if err != nil {
			return usageError("%v", err)
		}
		_, err = stdout.Write(src)
		return err
	}
	return usageError("takes at most one argument, a built-in topology's name")
}
