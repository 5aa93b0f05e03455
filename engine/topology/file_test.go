package topology

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/engine"
)

// Every built-in file loads, carries its file's name, describes its hardware, and reads back the
// same after Format.
func TestBuiltinsRoundTrip(t *testing.T) {
	names := Names()
	for _, want := range []string{"h100x1", "h100x2", "h100x4", "h100x8", "h100x8x2", "h100x8x4", "h200x8", "a100x8", "l40sx8"} {
		if !contains(names, want) {
			t.Errorf("built-ins %v lack %s", names, want)
		}
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			tp, err := Builtin(name)
			if err != nil {
				t.Fatal(err)
			}
			if tp.Name != name || !tp.Described() || tp.Description == "" {
				t.Errorf("%s: name %q, described %v, description %q", name, tp.Name, tp.Described(), tp.Description)
			}
			back, err := Parse("formatted", Format(tp))
			if err != nil {
				t.Fatalf("Parse(Format(%s)): %v\n%s", name, err, Format(tp))
			}
			if back != tp {
				t.Errorf("Parse(Format(%s)) = %+v; want %+v", name, back, tp)
			}
		})
	}
}

// The built-ins describe the hardware the issue names: one NIC per GPU on the H100 hosts, NVLS
// only where an NVSwitch has it, the A100's NVLink 3 and Ampere tables, a box with no NVLink.
func TestBuiltinHardware(t *testing.T) {
	tests := []struct {
		name     string
		hosts    int
		gpus     int
		arch     engine.Arch
		ic       engine.Interconnect
		nvls     bool
		perGPUGB float64
	}{
		{"h100x8", 1, 8, engine.ArchHopper, engine.NVSwitch, true, 50},
		{"h100x8x2", 2, 8, engine.ArchHopper, engine.NVSwitch, true, 50},
		{"h100x8x4", 4, 8, engine.ArchHopper, engine.NVSwitch, true, 50},
		{"h100x1", 1, 1, engine.ArchHopper, engine.NVSwitch, true, 50},
		{"h200x8", 1, 8, engine.ArchHopper, engine.NVSwitch, true, 50},
		{"a100x8", 1, 8, engine.ArchAmpere, engine.NVSwitch, false, 25},
		{"l40sx8", 1, 8, engine.ArchAda, engine.PCIeOnly, false, 6.25},
	}
	for _, tc := range tests {
		tp, err := Builtin(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if tp.Hosts != tc.hosts || tp.GPUsPerHost != tc.gpus || tp.GPU.Arch != tc.arch || tp.Interconnect != tc.ic ||
			tp.NVLS != tc.nvls || tp.PerGPUBps() != tc.perGPUGB*1e9 {
			t.Errorf("%s: %d×%d %v %v nvls=%v %.2f GB/s per GPU; want %d×%d %v %v nvls=%v %.2f", tc.name, tp.Hosts, tp.GPUsPerHost,
				tp.GPU.Arch, tp.Interconnect, tp.NVLS, tp.PerGPUBps()/1e9, tc.hosts, tc.gpus, tc.arch, tc.ic, tc.nvls, tc.perGPUGB)
		}
	}
	a, _ := Builtin("a100x8")
	if a.GPU.NVLinkGen != 3 || a.GPU.NVLinkBps != 300e9 || a.NICs.Bps != 25e9 {
		t.Errorf("a100x8: NVLink %d at %v, NIC %v; want NVLink 3 at 300 GB/s, 200 Gb/s NICs", a.GPU.NVLinkGen, a.GPU.NVLinkBps, a.NICs.Bps)
	}
}

const minimal = `base: h100x8
name: mine
hosts: 2
nics:
  per_host: 16
  bandwidth: 400Gb/s
`

// A file may start from a built-in and change only what differs ("two NICs per GPU").
func TestParseBase(t *testing.T) {
	tp, err := Parse("mine.yaml", []byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	h, _ := Builtin("h100x8")
	if tp.Name != "mine" || tp.Hosts != 2 || tp.PerGPUBps() != 100e9 || tp.GPU != h.GPU || tp.Costs != h.Costs {
		t.Errorf("parsed %+v", tp)
	}
}

// The cpu key may be left out of a complete file (files written before it existed): the hosts are
// then Intel, as NCCL's tuner treats any non-AMD host.
func TestParseWithoutCPU(t *testing.T) {
	a := mustBuiltin(t, "a100x8")
	var kept []string
	for _, l := range strings.Split(string(Format(a)), "\n") {
		if !strings.HasPrefix(l, "cpu:") {
			kept = append(kept, l)
		}
	}
	tp, err := Parse("old.yaml", []byte(strings.Join(kept, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	if a.CPU != engine.CPUAMD || tp.CPU != engine.CPUIntel {
		t.Errorf("a100x8 cpu %v; without the key %v; want amd, then intel", a.CPU, tp.CPU)
	}
}

// Every malformed file names the file and the line of the problem.
func TestParseErrors(t *testing.T) {
	full := string(Format(mustBuiltin(t, "h100x8")))
	line := func(key string) int { // the line of a key in full
		for i, l := range strings.Split(full, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), key+":") {
				return i + 1
			}
		}
		t.Fatalf("no %s in the formatted file", key)
		return 0
	}
	replace := func(key, value string) string {
		lines := strings.Split(full, "\n")
		i := line(key) - 1
		indent := lines[i][:len(lines[i])-len(strings.TrimLeft(lines[i], " "))]
		lines[i] = indent + key + ": " + value
		return strings.Join(lines, "\n")
	}
	tests := []struct {
		name, src, want string
	}{
		{"syntax", "name: [x\n", "f.yaml:"},
		{"empty", "", "f.yaml: empty file"},
		{"not a mapping", "- a\n- b\n", "f.yaml:1: a topology is a mapping"},
		{"unknown key", "base: h100x8\nname: x\ngpus: 8\n", `f.yaml:3: unknown key "gpus"`},
		{"unknown section key", "base: h100x8\nname: x\ngpu:\n  hbm: 1TB/s\n  hbw: 2\n", `f.yaml:5: unknown key "hbw" in gpu`},
		{"section not a mapping", "base: h100x8\nname: x\nnics: 8\n", "f.yaml:3: nics must be a mapping"},
		{"twice", "base: h100x8\nname: x\nname: y\n", `f.yaml:3: "name" given twice`},
		{"list value", "base: h100x8\nname: x\ngpu:\n  model: [a, b]\n", "f.yaml:4: gpu.model must be a single value"},
		{"unknown base", "base: h900x8\nname: x\n", `f.yaml:1: base: unknown topology "h900x8"`},
		{"missing keys", "name: x\nhosts: 1\n", "f.yaml: missing gpus_per_host, interconnect"},
		{"bad hosts", replace("hosts", "many"), `f.yaml:3: hosts: "many" is not a whole number`},
		{"zero hosts", replace("hosts", "0"), "f.yaml:3: hosts: 0 out of range (1 to 1024)"},
		{"bad bandwidth", replace("hbm", "fast"), `f.yaml:11: gpu.hbm: "fast" is not a bandwidth`},
		{"bandwidth without unit", replace("hbm", "1512"), `gpu.hbm: "1512" is not a bandwidth`},
		{"bad duration", replace("latency", "soon"), `nics.latency: "soon" is not a duration`},
		{"negative duration", replace("launch", "-1us"), `host.launch: "-1us" is not a duration`},
		{"efficiency above 1", replace("link_efficiency", "1.5"), "nccl.link_efficiency: 1.5 out of range"},
		{"bad arch", replace("arch", "volta"), `gpu.arch: "volta" is not an architecture`},
		{"bad interconnect", replace("interconnect", "ethernet"), `interconnect: "ethernet" is not an interconnect`},
		{"bad bool", replace("nvls", "maybe"), `nvls: "maybe" is not true or false`},
		{"bad cpu", replace("cpu", "sparc"), `f.yaml:7: cpu: "sparc" is not a CPU vendor (intel, amd, other)`},
		{"nvls without nvswitch", replace("interconnect", "nvlink-mesh"), "f.yaml:6: NVLS needs an NVSwitch"},
		{"nvls on ampere", "base: a100x8\nname: x\nnvls: true\n", "f.yaml:3: NVLS needs Hopper GPUs"},
		{"pcie with nvlink", "base: l40sx8\nname: x\ngpu:\n  nvlink: 100GB/s\n", "f.yaml:4: interconnect pcie has no NVLink"},
		{"nvswitch without nvlink", "base: h100x8\nname: x\ngpu:\n  nvlink: 0GB/s\n", "f.yaml:4: interconnect nvswitch needs NVLink bandwidth"},
		{"hosts without nics", "base: h100x8\nname: x\nhosts: 2\nnics:\n  per_host: 0\n", "f.yaml:5: 2 hosts need NICs"},
		{"too many GPUs", "base: h100x8\nname: x\nhosts: 1024\ngpus_per_host: 64\n", "f.yaml:3: 1024×64 GPUs"},
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

// Load reads a path as a user would give it, naming the topology after the file when the file
// does not; a name that is not a path is a built-in; an unknown name lists the built-ins.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "two-nics.yaml")
	if err := os.WriteFile(p, []byte("base: h100x8x2\nnics:\n  per_host: 16\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tp, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if tp.Name != "two-nics" || tp.Hosts != 2 || tp.PerGPUBps() != 100e9 {
		t.Errorf("Load(%s) = %s, %.0f GB/s per GPU", p, tp, tp.PerGPUBps()/1e9)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("Load(missing) = %v; want an error naming the file", err)
	}
	if err := os.WriteFile(p, []byte("base: h100x8\ngpu:\n  hbm: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), p+":3: gpu.hbm") {
		t.Errorf("Load(bad) = %v; want %s:3", err, p)
	}
	if tp, err := Load("a100x8"); err != nil || tp.GPU.Model != "A100 SXM" {
		t.Errorf("Load(a100x8) = %v, %v", tp, err)
	}
	if _, err := Load("h900"); err == nil || !strings.Contains(err.Error(), "a100x8, h100x1") {
		t.Errorf("Load(h900) = %v; want the built-ins listed", err)
	}
}

func TestSummary(t *testing.T) {
	for name, want := range map[string]string{
		"h100x8x2": "2×8 H100 SXM, nvswitch (NVLink 4, 450GB/s), NVLS, 8×400Gb/s InfiniBand NDR per host",
		"l40sx8":   "1×8 L40S, pcie (gen4, 27.5GB/s), no NVLS, 2×200Gb/s Ethernet RoCE per host",
	} {
		if got := Summary(mustBuiltin(t, name)); got != want {
			t.Errorf("Summary(%s) = %q; want %q", name, got, want)
		}
	}
}

// FuzzParse: no input makes Parse panic or run away, and whatever it accepts reads back the same
// after Format.
func FuzzParse(f *testing.F) {
	for _, name := range Names() {
		src, _ := Source(name)
		f.Add(src)
	}
	f.Add([]byte(minimal))
	f.Add([]byte("base: h100x8\nname: x\ngpu: {hbm: 1e3GB/s}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tp, err := Parse("fuzz", data)
		if err != nil {
			var te *Error
			if !errors.As(err, &te) {
				t.Fatalf("Parse error %v is not an *Error", err)
			}
			return
		}
		back, err := Parse("formatted", Format(tp))
		if err != nil {
			t.Fatalf("Parse(Format(%+v)): %v\n%s", tp, err, Format(tp))
		}
		if back != tp {
			t.Fatalf("round trip: %+v; want %+v", back, tp)
		}
	})
}

func mustBuiltin(t *testing.T, name string) engine.Topology {
	t.Helper()
	tp, err := Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
