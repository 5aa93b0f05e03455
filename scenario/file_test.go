package scenario

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/sim"
)

const valid = `name: t
topology: h100x8
steps: 3
knobs:
  size: {default: 1MiB, help: bytes}
  mode: {default: "on", values: ["on", "off"]}
engine:
  early_enqueue: ${mode}
phases:
  - collective:
      bytes: ${size}
      ranks: 0-3
`

func TestParseValid(t *testing.T) {
	f, err := Parse("t.yaml", []byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "t" || f.Steps != 3 || len(f.Knobs) != 2 || len(f.Phases) != 1 || f.Phases[0].Line != 10 {
		t.Errorf("parsed %+v", f)
	}
	topo, _ := sim.TopologyByName("h100x8")
	sc, err := Resolve(f, map[string]string{"mode": "off", "size": "4KiB"}, topo)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Options.EarlyEnqueue || sc.Knobs["size"] != "4KiB" {
		t.Errorf("knobs not applied: %+v %v", sc.Options, sc.Knobs)
	}
}

// Every malformed input names the file and the line of the problem.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"syntax", "name: [x\n", "f.yaml:"},
		{"empty", "", "f.yaml: empty file"},
		{"not a mapping", "- a\n- b\n", "a scenario is a mapping"},
		{"unknown key", "name: x\nphase: []\n", `f.yaml:2: unknown key "phase"`},
		{"bad steps", "name: x\nsteps: many\nphases: [{compute: {}}]\n", `f.yaml:2: steps must be a positive integer, not "many"`},
		{"no name", "phases: [{compute: {}}]\n", "has no name"},
		{"no phases", "name: x\n", "has no phases"},
		{"knob without default", "name: x\nknobs:\n  a: {help: x}\nphases: [{compute: {}}]\n", "f.yaml:3: knob a has no default"},
		{"knob default not allowed", "name: x\nknobs:\n  a: {default: z, values: [x, y]}\nphases: [{compute: {}}]\n", `f.yaml:3: knob a: default "z" is not one of x|y`},
		{"bad knob name", "name: x\nknobs:\n  A-b: 1\nphases: [{compute: {}}]\n", `f.yaml:3: knob name "A-b"`},
		{"phase with two keys", "name: x\nphases:\n  - {compute: {}, copy: {}}\n", "f.yaml:3: each phase is a mapping with one key"},
		{"duplicate param", "name: x\nphases:\n  - compute:\n      duration: 1ms\n      duration: 2ms\n", "f.yaml:5: compute.duration given twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("f.yaml", []byte(tc.src))
			var se *Error
			if err == nil || !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse error = %v; want an *Error containing %q", err, tc.want)
			}
		})
	}
}

// Problems found when applying knobs and building phases also name file and line.
func TestResolveErrors(t *testing.T) {
	topo, _ := sim.TopologyByName("h100x8")
	tests := []struct {
		name string
		src  string
		sets map[string]string
		want string
	}{
		{"unknown phase", "name: x\nphases:\n  - teleport: {}\n", nil, `f.yaml:3: unknown phase "teleport"`},
		{"unknown param", "name: x\nphases:\n  - compute:\n      durration: 1ms\n", nil, `f.yaml:4: compute: unknown parameter "durration" (known: count, duration, label, ranks)`},
		{"unknown knob ref", "name: x\nphases:\n  - compute:\n      duration: ${d}\n", nil, "f.yaml:4: duration refers to unknown knob ${d}"},
		{"device out of range", "name: x\nphases:\n  - compute:\n      ranks: 0-9\n", nil, "f.yaml:4: compute.ranks: device 8 does not exist: topology h100x8 has devices 0..7"},
		{"duplicate device", "name: x\nphases:\n  - compute:\n      ranks: 1,1\n", nil, "device 1 is listed twice"},
		{"bad nccl_algo", "name: x\nengine:\n  nccl_algo: collnet\nphases: [{compute: {}}]\n", nil, `f.yaml:3: engine.nccl_algo: "collnet" must be one of auto|ring|tree|nvls|nvlstree`},
		{"bad engine setting", "name: x\nengine:\n  d2d_priority: urgent\nphases: [{compute: {}}]\n", nil, `f.yaml:3: engine.d2d_priority: "urgent" must be one of high|normal`},
		{"unknown engine setting", "name: x\nengine:\n  turbo: on\nphases: [{compute: {}}]\n", nil, `f.yaml:3: engine: unknown parameter "turbo"`},
		{"crosshost on one host", "name: x\nphases:\n  - crosshost: {}\n", nil, "f.yaml:3: crosshost needs at least 2 hosts"},
		{"pipeline too long", "name: x\nphases:\n  - pipeline: {stages: 8, stride: 2}\n", nil, "f.yaml:3: pipeline: stage 4 would be on device 8"},
		{"bad duration", "name: x\nphases:\n  - compute: {duration: soon}\n", nil, `f.yaml:3: compute.duration: "soon" is not a duration`},
		{"out of range", "name: x\nphases:\n  - compute: {count: 0}\n", nil, "f.yaml:3: compute.count: 0 is out of range"},
		{"tp wider than a host", "name: x\nphases:\n  - tp_layers: {tp: 16}\n", nil, "f.yaml:3: tp_layers: tp 16 needs 16 GPUs on one host; topology h100x8 has 8 per host"},
		{"tp chunks too many", "name: x\nphases:\n  - tp_layers: {shard_bytes: 8, chunks: 16}\n", nil, "f.yaml:3: tp_layers: shard_bytes (8) and gemm (200000 ns) must each be at least chunks (16)"},
		{"tp overlap unknown", "name: x\nphases:\n  - tp_layers: {overlap: bulk}\n", nil, `f.yaml:3: tp_layers.overlap: "bulk" must be one of off|ring`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("f.yaml", []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Resolve(f, tc.sets, topo)
			var se *Error
			if err == nil || !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Resolve error = %v; want an *Error containing %q", err, tc.want)
			}
		})
	}
}

// A problem with a knob's override names the override (what the user typed) before the file: the
// whole message is the *SetError's. A bad value that is the file's own is still the file's.
func TestResolveSetErrors(t *testing.T) {
	topo, _ := sim.TopologyByName("h100x8")
	twice := "name: x\nknobs:\n  d: {default: 1ms}\nphases:\n  - compute: {duration: \"${d}\", count: \"${d}\"}\n"
	tests := []struct {
		name string
		src  string
		sets map[string]string
		want string // the whole message; "" when the file, not an override, is to blame
	}{
		{"unknown knob", valid, map[string]string{"nope": "1"}, `--set nope=1: unknown knob "nope" for scenario t (knobs: size, mode)`},
		{"value not allowed", valid, map[string]string{"mode": "maybe"}, "--set mode=maybe: must be one of on|off; the knob is declared at f.yaml:6"},
		{"bad size", valid, map[string]string{"size": "lots"}, `--set size=lots: "lots" is not a size (examples: 8, 64KiB, 1GiB); it sets collective.bytes at f.yaml:11`},
		{"an engine setting", valid, map[string]string{"mode": ""}, `--set mode="": must be one of on|off; the knob is declared at f.yaml:6`},
		{"a value with spaces", twice, map[string]string{"d": "very soon"}, `--set d="very soon": "very soon" is not a duration (examples: 150us, 21ms, 2s); it sets compute.duration at f.yaml:5`},
		{"a direction list", "name: x\nknobs:\n  dirs: {default: h2d}\nphases:\n  - copy_sweep: {dirs: \"${dirs}\"}\n", map[string]string{"dirs": "h2d,up"},
			`--set dirs=h2d,up: "up" is not one of h2d, d2h, d2d; it sets copy_sweep.dirs at f.yaml:5`},
		{"a default, not an override", "name: x\nknobs:\n  d: {default: soon}\nphases:\n  - compute: {duration: \"${d}\"}\n", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("f.yaml", []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Resolve(f, tc.sets, topo)
			var se *SetError
			switch {
			case tc.want == "" && (err == nil || errors.As(err, &se)):
				t.Errorf("Resolve error = %v; want the file's *Error", err)
			case tc.want != "" && (!errors.As(err, &se) || err.Error() != tc.want):
				t.Errorf("Resolve error = %v;\nwant the *SetError %s", err, tc.want)
			}
		})
	}
}

// Every built-in parses and builds on its own topology, and has a description and knob help.
func TestBuiltins(t *testing.T) {
	names := BuiltinNames()
	for _, want := range []string{"pipeline", "allreduce-sweep", "moe-alltoall", "straggler", "overlap", "crosshost", "deadlock", "copy-sweep", "tp-overlap"} {
		if !contains(names, want) {
			t.Errorf("built-in %q missing (have %v)", want, names)
		}
	}
	for _, name := range names {
		f, err := Builtin(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		topo, err := sim.TopologyByName(f.Topology)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := Resolve(f, nil, topo); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if f.Description == "" {
			t.Errorf("%s has no description", name)
		}
		for _, k := range f.Knobs {
			if k.Help == "" {
				t.Errorf("%s: knob %s has no help", name, k.Name)
			}
		}
	}
	if _, err := Load("no-such-scenario"); err == nil || !strings.Contains(err.Error(), "built-in: allreduce-sweep") {
		t.Errorf("unknown name: %v", err)
	}
}

func TestValues(t *testing.T) {
	sizes := map[string]int64{"8": 8, "8B": 8, "64KiB": 64 << 10, "1.5MiB": 3 << 19, "1GiB": 1 << 30, "4GB": 4e9, "1_000": 1000}
	for in, want := range sizes {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "1XB", "lots", "1e30GiB"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
	for _, n := range []int64{8, 1 << 10, 64 << 20, 1 << 30, 1000} {
		if got, _ := ParseSize(FormatSize(n)); got != n {
			t.Errorf("FormatSize(%d) = %q does not parse back", n, FormatSize(n))
		}
	}
}

// FuzzParse: the scenario parser never panics, and whatever it accepts resolves or fails with an
// *Error.
func FuzzParse(f *testing.F) {
	f.Add([]byte(valid))
	for _, name := range BuiltinNames() {
		data, _ := builtinFS.ReadFile("builtin/" + name + ".yaml")
		f.Add(data)
	}
	f.Add([]byte("name: x\nphases:\n  - sweep: {min_bytes: 1, max_bytes: 0}\n"))
	topo := engine.Topology{Name: "h100x8x2", Hosts: 2, GPUsPerHost: 8}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz.yaml", data)
		if err != nil {
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("Parse error %v is not an *Error", err)
			}
			return
		}
		if _, err := Resolve(file, nil, topo); err != nil {
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("Resolve error %v is not an *Error", err)
			}
		}
	})
}

// FuzzParseSize: sizes never panic and what parses is non-negative.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"8", "64KiB", "1.5GiB", "-3", "1e400", "NaN", "Inf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, err := ParseSize(s); err == nil && v < 0 {
			t.Fatalf("ParseSize(%q) = %d", s, v)
		}
	})
}

// TestLoadTooLarge: a scenario file past the bound is refused before it is parsed, naming it.
func TestLoadTooLarge(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(p, bytes.Repeat([]byte("#"), maxFileSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(p)
	if err == nil || !strings.Contains(err.Error(), p+": larger than 1 MiB, too large for a scenario file") {
		t.Fatalf("Load(%d bytes) = %v; want it refused as too large", maxFileSize+1, err)
	}
}
