package scenario

import (
	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/fileerr"
	"gopkg.in/yaml.v3"
)

// parseFaults reads a scenario's `faults:` list: each item a mapping of the --fault flag's keys
// ({kind: nic_slow, host: 37, nic: 3, factor: 0.3, at: 2s}) or the flag's own string.
func parseFaults(src string, v *yaml.Node) ([]fault.Fault, error) {
	if v.Kind != yaml.SequenceNode {
		return nil, fileerr.At(src, v.Line, "faults must be a list of faults, e.g. - {kind: nic_slow, host: 1, nic: 0, factor: 0.3, at: 2s}")
	}
	var out []fault.Fault
	for _, it := range v.Content {
		var (
			f   fault.Fault
			err error
		)
		switch it.Kind {
		case yaml.ScalarNode:
			f, err = fault.Parse(it.Value)
		case yaml.MappingNode:
			kv, order := map[string]string{}, []string{}
			for j := 0; j+1 < len(it.Content); j += 2 {
				k, x := it.Content[j], it.Content[j+1]
				if x.Kind != yaml.ScalarNode {
					return nil, fileerr.At(src, x.Line, "fault key %s must be a single value", k.Value)
				}
				if _, dup := kv[k.Value]; dup {
					return nil, fileerr.At(src, k.Line, "fault key %s given twice", k.Value)
				}
				kv[k.Value] = x.Value
				order = append(order, k.Value)
			}
			f, err = fault.FromMap(kv, order)
		default:
			return nil, fileerr.At(src, it.Line, "a fault is a mapping (kind: ..., host: ...) or a string kind=...,host=...")
		}
		if err != nil {
			return nil, fileerr.At(src, it.Line, "fault: %v", err)
		}
		out = append(out, f)
	}
	return out, nil
}
