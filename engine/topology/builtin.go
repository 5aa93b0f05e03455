package topology

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/fileerr"
)

//go:embed builtin/*.yaml
var builtinFS embed.FS

// Default is the topology used when neither the scenario nor the user names one; the simulator's
// default calibration is this file's.
const Default = "h100x8"

// Names returns the names of the built-in topologies, sorted.
func Names() []string {
	entries, _ := fs.ReadDir(builtinFS, "builtin")
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(out)
	return out
}

// Source returns a built-in topology's file as it is embedded, for a user to copy and edit.
func Source(name string) ([]byte, error) { return builtinSource(name) }

func builtinSource(name string) ([]byte, error) {
	data, err := builtinFS.ReadFile(path.Join("builtin", name+".yaml"))
	if err != nil || strings.ContainsAny(name, "/\\") {
		return nil, fmt.Errorf("unknown topology %q (built-in: %s; or give a path to a .yaml file)", name, strings.Join(Names(), ", "))
	}
	return data, nil
}

// Builtin returns the built-in topology with the given name.
func Builtin(name string) (engine.Topology, error) {
	data, err := builtinSource(name)
	if err != nil {
		return engine.Topology{}, err
	}
	return Parse("builtin:"+name, data)
}

// IsPathLike reports whether nameOrPath is written as a path: it contains a path separator or ends
// in .yaml/.yml.
func IsPathLike(nameOrPath string) bool {
	return strings.ContainsRune(nameOrPath, os.PathSeparator) || strings.ContainsRune(nameOrPath, '/') ||
		strings.HasSuffix(nameOrPath, ".yaml") || strings.HasSuffix(nameOrPath, ".yml")
}

// IsPath reports whether nameOrPath names a file rather than a built-in: it is written as a path
// (IsPathLike), or a file of that name exists.
func IsPath(nameOrPath string) bool {
	if IsPathLike(nameOrPath) {
		return true
	}
	_, err := os.Stat(nameOrPath)
	return err == nil
}

// maxFileSize bounds what Load reads: a topology file is a few kilobytes.
const maxFileSize = 1 << 20

// Load returns a built-in topology by name, or reads a topology file when nameOrPath names one
// (see IsPath). A file without a name takes its file name's.
func Load(nameOrPath string) (engine.Topology, error) {
	if !IsPath(nameOrPath) {
		return Builtin(nameOrPath)
	}
	data, err := fileerr.ReadBounded(nameOrPath, "topology file", maxFileSize)
	if err != nil {
		return engine.Topology{}, fmt.Errorf("read topology: %w", err)
	}
	stem := strings.TrimSuffix(strings.TrimSuffix(path.Base(strings.ReplaceAll(nameOrPath, "\\", "/")), ".yaml"), ".yml")
	return parse(nameOrPath, data, 0, stem)
}

// Summary describes t on one line: hosts × GPUs, GPU model, interconnect, NVLS, NICs.
func Summary(t engine.Topology) string {
	nvls := "no NVLS"
	if t.NVLS {
		nvls = "NVLS"
	}
	link := t.Interconnect.String()
	if t.GPU.NVLinkBps > 0 {
		link = fmt.Sprintf("%s (NVLink %d, %s)", link, t.GPU.NVLinkGen, formatBandwidth(t.GPU.NVLinkBps, false))
	} else {
		link = fmt.Sprintf("%s (gen%d, %s)", link, t.PCIe.Gen, formatBandwidth(t.PCIe.PinnedBps, false))
	}
	nics := "no NICs"
	if t.NICs.PerHost > 0 {
		nics = fmt.Sprintf("%d×%s %s per host", t.NICs.PerHost, formatBandwidth(t.NICs.Bps, true), t.NICs.Type)
	}
	return fmt.Sprintf("%d×%d %s, %s, %s, %s", t.Hosts, t.GPUsPerHost, t.GPU.Model, link, nvls, nics)
}
