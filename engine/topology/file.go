package topology

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/fileerr"
)

// Error is a problem in a topology file: it names the file and, where it can, the line.
type Error = fileerr.Error

// maxBaseDepth bounds a chain of files each naming another as its base.
const maxBaseDepth = 4

// entry is one key: value of a file, flattened ("gpu.hbm").
type entry struct {
	key, value string
	line       int
}

// Parse reads a topology file. src names it in errors. A file without `base` gives every key; one
// with `base: NAME` starts from that built-in topology and sets only the keys it gives.
func Parse(src string, data []byte) (engine.Topology, error) {
	return parse(src, data, 0, "")
}

// parse reads a file at depth in a chain of bases; a file that gives no name is called name.
func parse(src string, data []byte, depth int, name string) (engine.Topology, error) {
	entries, base, baseLine, err := flatten(src, data)
	if err != nil {
		return engine.Topology{}, err
	}
	var t engine.Topology
	lines := map[string]int{}
	if base != "" {
		if depth >= maxBaseDepth {
			return t, fileerr.At(src, baseLine, "base %q: bases nest more than %d deep", base, maxBaseDepth)
		}
		b, err := builtinSource(base)
		if err != nil {
			return t, fileerr.At(src, baseLine, "base: %v", err)
		}
		if t, err = parse("builtin:"+base, b, depth+1, ""); err != nil {
			return t, err
		}
		t.Name, t.Description = "", ""
	}
	for _, e := range entries {
		f := fieldByKey(e.key)
		if err := f.set(&t, e.value); err != nil {
			return t, fileerr.At(src, e.line, "%s: %v", e.key, err)
		}
		lines[e.key] = e.line
	}
	if base == "" {
		var missing []string
		for _, f := range fields {
			if _, ok := lines[f.key]; !ok && !f.optional && f.key != "description" && (f.key != "name" || name != "") {
				missing = append(missing, f.key)
			}
		}
		if len(missing) > 0 {
			return t, fileerr.At(src, 0, "missing %s (give every key, or start from a built-in with base: NAME)", strings.Join(missing, ", "))
		}
	}
	if t.Name == "" {
		t.Name = name
	}
	if err := validate(&t); err != nil {
		return t, fileerr.At(src, lines[err.key], "%s", err.msg)
	}
	return t, nil
}

// flatten checks a file's structure and returns its keys in file order, with base apart.
func flatten(src string, data []byte) (out []entry, base string, baseLine int, err error) {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		return nil, "", 0, fileerr.FromYAML(src, err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, "", 0, fileerr.At(src, doc.Line, "a topology is a mapping with keys %s", keysIn(""))
	}
	top := doc.Content[0]
	seen := map[string]bool{}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		if seen[k.Value] {
			return nil, "", 0, fileerr.At(src, k.Line, "%q given twice", k.Value)
		}
		seen[k.Value] = true
		switch {
		case k.Value == "base":
			if v.Kind != yaml.ScalarNode || v.Value == "" {
				return nil, "", 0, fileerr.At(src, v.Line, "base must name a built-in topology")
			}
			base, baseLine = v.Value, k.Line
		case isSection(k.Value):
			if v.Kind != yaml.MappingNode {
				return nil, "", 0, fileerr.At(src, v.Line, "%s must be a mapping with keys %s", k.Value, keysIn(k.Value))
			}
			for j := 0; j+1 < len(v.Content); j += 2 {
				kk, vv := v.Content[j], v.Content[j+1]
				key := k.Value + "." + kk.Value
				if fieldByKey(key) == nil {
					return nil, "", 0, fileerr.At(src, kk.Line, "unknown key %q in %s (known: %s)", kk.Value, k.Value, keysIn(k.Value))
				}
				if seen[key] {
					return nil, "", 0, fileerr.At(src, kk.Line, "%s given twice", key)
				}
				seen[key] = true
				if vv.Kind != yaml.ScalarNode {
					return nil, "", 0, fileerr.At(src, vv.Line, "%s must be a single value", key)
				}
				out = append(out, entry{key, vv.Value, kk.Line})
			}
		case fieldByKey(k.Value) != nil:
			if v.Kind != yaml.ScalarNode {
				return nil, "", 0, fileerr.At(src, v.Line, "%s must be a single value", k.Value)
			}
			value := v.Value
			if k.Value == "description" {
				value = strings.TrimSpace(value)
			}
			out = append(out, entry{k.Value, value, k.Line})
		default:
			return nil, "", 0, fileerr.At(src, k.Line, "unknown key %q (known: %s)", k.Value, keysIn(""))
		}
	}
	return out, base, baseLine, nil
}

func isSection(s string) bool {
	for _, x := range sections {
		if x == s {
			return true
		}
	}
	return false
}

// invalid is a rule a topology breaks, with the key whose line the error names.
type invalid struct {
	key, msg string
}

// validate checks what no single key can: the keys' agreement with each other.
func validate(t *engine.Topology) *invalid {
	switch {
	case t.Name == "":
		return &invalid{"name", "the topology has no name"}
	case t.Interconnect == engine.PCIeOnly && t.GPU.NVLinkBps != 0:
		return &invalid{"gpu.nvlink", "interconnect pcie has no NVLink: gpu.nvlink must be 0GB/s"}
	case t.Interconnect != engine.PCIeOnly && t.GPU.NVLinkBps < 1e6:
		return &invalid{"gpu.nvlink", fmt.Sprintf("interconnect %s needs NVLink bandwidth (gpu.nvlink)", t.Interconnect)}
	case t.Interconnect != engine.PCIeOnly && t.GPU.NVLinkLinks < 1:
		return &invalid{"gpu.nvlink_links", fmt.Sprintf("interconnect %s needs gpu.nvlink_links of at least 1", t.Interconnect)}
	case t.NVLS && t.Interconnect != engine.NVSwitch:
		return &invalid{"nvls", fmt.Sprintf("NVLS needs an NVSwitch; interconnect is %s", t.Interconnect)}
	case t.NVLS && t.GPU.Arch != engine.ArchHopper:
		// NCCL searches no NVLS graph below compute capability 9.0 (search.cc), whatever the switch.
		return &invalid{"nvls", fmt.Sprintf("NVLS needs Hopper GPUs (NCCL uses NVLink SHARP from compute capability 9.0); gpu.arch is %s", t.GPU.Arch)}
	case t.Hosts > 1 && (t.NICs.PerHost < 1 || t.NICs.Bps < 1e6):
		return &invalid{"nics.per_host", fmt.Sprintf("%d hosts need NICs: nics.per_host and nics.bandwidth", t.Hosts)}
	case t.Hosts*t.GPUsPerHost > maxHosts*8:
		return &invalid{"hosts", fmt.Sprintf("%d×%d GPUs: at most %d in all", t.Hosts, t.GPUsPerHost, maxHosts*8)}
	}
	return validateFabric(t)
}

// validateFabric checks the fabric section against itself and the rest of the topology.
func validateFabric(t *engine.Topology) *invalid {
	f := &t.Fabric
	rail := f.Kind == engine.FabricRail
	bad := func(key, format string, a ...any) *invalid {
		return &invalid{key, key + ": " + fmt.Sprintf(format, a...)}
	}
	switch {
	case f.Oversubscription != 0 && f.Oversubscription < 1:
		return bad("fabric.oversubscription", "%v is below 1: it is the leaf's down:up bandwidth ratio (1 is non-blocking, 4 is 4:1)", f.Oversubscription)
	case !rail:
		for _, k := range []struct {
			key string
			set bool
		}{{"fabric.switch_radix", f.SwitchRadix != 0}, {"fabric.hosts_per_leaf", f.HostsPerLeaf != 0},
			{"fabric.oversubscription", f.Oversubscription > 1}, {"fabric.hop_latency", f.HopLatencyNs != 0}} {
			if k.set {
				return bad(k.key, "describes the leaf switches of a rail fabric: add fabric.kind: rail")
			}
		}
	case t.NICs.PerHost < 1 || t.NICs.Bps < 1e6:
		return bad("fabric.kind", "a rail fabric joins the hosts' NICs: give nics.per_host and nics.bandwidth")
	case f.SwitchRadix < 2 && f.HostsPerLeaf == 0:
		return bad("fabric.kind", "a rail fabric needs fabric.switch_radix (a leaf's ports, e.g. 64) or fabric.hosts_per_leaf")
	case f.SwitchRadix >= 2 && f.HostsPerLeaf > 0 && float64(f.HostsPerLeaf)*(1+1/f.Oversub()) > float64(f.SwitchRadix)+1e-9:
		return bad("fabric.hosts_per_leaf", "%d hosts per leaf at %v:1 need %d ports; fabric.switch_radix is %d",
			f.HostsPerLeaf, f.Oversub(), int(math.Ceil(float64(f.HostsPerLeaf)*(1+1/f.Oversub()))), f.SwitchRadix)
	}
	switch {
	case f.NVLinkDomain != 0 && f.NVLinkDomain%t.GPUsPerHost != 0:
		return bad("fabric.nvlink_domain", "%d GPUs is not a whole number of hosts of %d GPUs", f.NVLinkDomain, t.GPUsPerHost)
	case f.NVLinkDomain > t.GPUsPerHost && t.Interconnect != engine.NVSwitch:
		return bad("fabric.nvlink_domain", "an NVLink domain across hosts needs NVSwitches; interconnect is %s", t.Interconnect)
	}
	return nil
}

// Format writes t as a complete topology file (no base): Parse(Format(t)) gives t back.
func Format(t engine.Topology) []byte {
	var b bytes.Buffer
	section := ""
	for i := range fields {
		f := &fields[i]
		s, k, ok := strings.Cut(f.key, ".")
		if !ok {
			k = s
		} else if s != section {
			section = s
			fmt.Fprintf(&b, "%s:\n", s)
		}
		v := f.get(&t)
		if f.kind == kString {
			v = quote(v)
		}
		indent := ""
		if ok {
			indent = "  "
		}
		fmt.Fprintf(&b, "%s%s: %s\n", indent, k, v)
	}
	return b.Bytes()
}

// quote writes s as a YAML scalar that reads back as s.
func quote(s string) string {
	out, err := yaml.Marshal(s)
	if err != nil {
		return fmt.Sprintf("%q", s)
	}
	q := strings.TrimSuffix(string(out), "\n")
	if strings.Contains(q, "\n") {
		// A block scalar: write a double-quoted one on one line instead (YAML's escapes are JSON's).
		return fmt.Sprintf("%q", s)
	}
	return q
}

// WithHosts returns t scaled to hosts hosts of the same kind (what --hosts asks for), named after
// t and its size, and checked as a file giving `hosts: N` would be.
func WithHosts(t engine.Topology, hosts int) (engine.Topology, error) {
	f := fieldByKey("hosts")
	if err := f.bounds(float64(hosts), strconv.Itoa(hosts)); err != nil {
		return t, err
	}
	if hosts == t.Hosts {
		return t, nil
	}
	t.Hosts = hosts
	t.Name = fmt.Sprintf("%s-%dhosts", t.Name, hosts)
	t.Description = fmt.Sprintf("%s; scaled to %d hosts", t.Description, hosts)
	if err := validate(&t); err != nil {
		return t, fmt.Errorf("%s", err.msg)
	}
	return t, nil
}
