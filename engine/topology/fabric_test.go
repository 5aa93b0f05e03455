package topology

import (
	"errors"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/engine"
)

// railFile is docs/topologies.md's worked example: 64 hosts of 8 H100 on a rail-optimized
// leaf/spine of 64-port leaves at 4:1.
const railFile = `base: h100x8x2
name: h100-rail64
hosts: 64
fabric:
  kind: rail
  switch_radix: 40
  oversubscription: 4
  hop_latency: 600ns
`

// A fabric section parses into the topology, derives the rail groups and port bandwidths the
// simulator uses, and reads back the same after Format.
func TestParseFabric(t *testing.T) {
	tp, err := Parse("rail.yaml", []byte(railFile))
	if err != nil {
		t.Fatal(err)
	}
	f := tp.Fabric
	if f.Kind != engine.FabricRail || f.SwitchRadix != 40 || f.Oversubscription != 4 || f.HopLatencyNs != 600 {
		t.Errorf("fabric = %+v; want rail, radix 40, 4:1, 600 ns", f)
	}
	// 40 ports at 4:1: 32 down (one per host on the rail), 8 up; 64 hosts fill 2 rail groups.
	if got := f.LeafHosts(); got != 32 {
		t.Errorf("LeafHosts = %d; want 32 (40·4/5)", got)
	}
	if got := tp.RailGroups(); got != 2 {
		t.Errorf("RailGroups = %d; want 2", got)
	}
	if got := tp.RailGroupOf(33); got != 1 {
		t.Errorf("RailGroupOf(33) = %d; want 1", got)
	}
	// 32 hosts × 50 GB/s per GPU's NIC / 4 = 400 GB/s up and down.
	if got := tp.LeafPortBps(); got != 400e9 {
		t.Errorf("LeafPortBps = %v; want 400e9", got)
	}
	back, err := Parse("formatted", Format(tp))
	if err != nil {
		t.Fatalf("Parse(Format): %v\n%s", err, Format(tp))
	}
	if back != tp {
		t.Errorf("Parse(Format) = %+v; want %+v", back, tp)
	}
	if !strings.Contains(string(Format(tp)), "fabric:\n  kind: rail\n  switch_radix: 40\n") {
		t.Errorf("Format lacks the fabric section:\n%s", Format(tp))
	}
}

// Without a fabric section a topology keeps today's network, and the defaults derive as the docs
// say: half the radix down at 1:1, an NVLink domain of a host.
func TestFabricDefaults(t *testing.T) {
	tp := mustBuiltin(t, "h100x8x2")
	if tp.Fabric != (engine.Fabric{}) || tp.RailGroups() != 1 || tp.LeafPortBps() != 0 || tp.DomainGPUs() != 8 {
		t.Errorf("h100x8x2 fabric = %+v, %d groups, %v B/s ports, domain %d; want none, 1, 0, 8",
			tp.Fabric, tp.RailGroups(), tp.LeafPortBps(), tp.DomainGPUs())
	}
	f := engine.Fabric{Kind: engine.FabricRail, SwitchRadix: 64}
	if f.LeafHosts() != 32 || f.Oversub() != 1 {
		t.Errorf("radix 64 at 1:1: %d hosts per leaf, %v:1; want 32, 1", f.LeafHosts(), f.Oversub())
	}
	nvl, err := Parse("nvl.yaml", []byte("base: h100x8x2\nname: x\nhosts: 18\ngpus_per_host: 4\nfabric:\n  nvlink_domain: 72\n"))
	if err != nil {
		t.Fatal(err)
	}
	if nvl.DomainGPUs() != 72 || nvl.DomainOf(71) != 0 || nvl.DomainOf(72) != 1 {
		t.Errorf("NVL72: domain %d GPUs, DomainOf(71)=%d, DomainOf(72)=%d; want 72, 0, 1", nvl.DomainGPUs(), nvl.DomainOf(71), nvl.DomainOf(72))
	}
}

func TestParseFabricErrors(t *testing.T) {
	const head = "base: h100x8x2\nname: x\nfabric:\n"
	tests := []struct {
		name, src, want string
	}{
		{"bad kind", head + "  kind: torus\n", `f.yaml:4: fabric.kind: "torus" is not a fabric kind (none, rail)`},
		{"unknown key", head + "  kind: rail\n  radix: 64\n", `f.yaml:5: unknown key "radix" in fabric`},
		{"rail without radix", head + "  kind: rail\n", "f.yaml:4: fabric.kind: a rail fabric needs fabric.switch_radix"},
		{"switches without rail", head + "  switch_radix: 64\n", "f.yaml:4: fabric.switch_radix: describes the leaf switches of a rail fabric: add fabric.kind: rail"},
		{"undersubscribed", head + "  kind: rail\n  switch_radix: 64\n  oversubscription: 0.5\n", "f.yaml:6: fabric.oversubscription: 0.5 is below 1"},
		{"oversubscription not a number", head + "  kind: rail\n  switch_radix: 64\n  oversubscription: lots\n", `f.yaml:6: fabric.oversubscription: "lots" is not a number`},
		{"too many hosts per leaf", head + "  kind: rail\n  switch_radix: 64\n  hosts_per_leaf: 40\n", "f.yaml:6: fabric.hosts_per_leaf: 40 hosts per leaf at 1:1 need 80 ports; fabric.switch_radix is 64"},
		{"bad hop latency", head + "  kind: rail\n  switch_radix: 64\n  hop_latency: quick\n", `f.yaml:6: fabric.hop_latency: "quick" is not a duration`},
		{"domain not whole hosts", head + "  nvlink_domain: 12\n", "f.yaml:4: fabric.nvlink_domain: 12 GPUs is not a whole number of hosts of 8 GPUs"},
		{"domain without nvswitch", "base: l40sx8\nname: x\nhosts: 2\nfabric:\n  nvlink_domain: 16\n", "f.yaml:5: fabric.nvlink_domain: an NVLink domain across hosts needs NVSwitches"},
		{"rail without nics", "base: h100x8\nname: x\nnics:\n  per_host: 0\nfabric:\n  kind: rail\n  switch_radix: 64\n", "f.yaml:6: fabric.kind: a rail fabric joins the hosts' NICs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("f.yaml", []byte(tc.src))
			var te *Error
			if err == nil || !errors.As(err, &te) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse error = %v; want an *Error containing %q", err, tc.want)
			}
		})
	}
}

// WithHosts scales a topology as `--hosts N` does: the same hardware on N hosts, renamed, checked
// as a file would be.
func TestWithHosts(t *testing.T) {
	tp, err := WithHosts(mustBuiltin(t, "h100x8x2"), 512)
	if err != nil {
		t.Fatal(err)
	}
	if tp.Hosts != 512 || tp.Name != "h100x8x2-512hosts" || tp.Devices() != 4096 || tp.GPU != mustBuiltin(t, "h100x8x2").GPU {
		t.Errorf("WithHosts(h100x8x2, 512) = %s, %d hosts, %d GPUs; want h100x8x2-512hosts, 512, 4096 and the same GPUs", tp.Name, tp.Hosts, tp.Devices())
	}
	for _, tc := range []struct {
		base  string
		hosts int
		want  string
	}{
		{"h100x8x2", 2000, "2000 out of range (1 to 1024)"},
		{"h100x8x2", 0, "0 out of range"},
		{"l40sx8", 1024, ""},
		{"h100x8", 4, ""},
	} {
		_, err := WithHosts(mustBuiltin(t, tc.base), tc.hosts)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("WithHosts(%s, %d) = %v; want %q", tc.base, tc.hosts, err, tc.want)
		}
	}
}
