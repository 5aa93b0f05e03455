package scenario

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/xfertop/xfertop/fileerr"
)

//go:embed builtin/*.yaml
var builtinFS embed.FS

// DefaultName is the scenario xfertop runs when none is named.
const DefaultName = "pipeline"

// BuiltinNames returns the names of the built-in scenarios.
func BuiltinNames() []string {
	entries, _ := fs.ReadDir(builtinFS, "builtin")
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(out)
	return out
}

// Source returns the file of the built-in scenario with the given name, for a user to copy and edit.
func Source(name string) ([]byte, error) {
	data, err := builtinFS.ReadFile(path.Join("builtin", name+".yaml"))
	if err != nil || strings.ContainsAny(name, "/\\") {
		return nil, fmt.Errorf("unknown scenario %q (built-in: %s; or give a path to a .yaml file)", name, strings.Join(BuiltinNames(), ", "))
	}
	return data, nil
}

// Builtin returns the built-in scenario with the given name.
func Builtin(name string) (*File, error) {
	data, err := Source(name)
	if err != nil {
		return nil, err
	}
	return Parse("builtin:"+name, data)
}

// maxFileSize bounds what Load reads: a scenario file is a few kilobytes.
const maxFileSize = 1 << 20

// Load returns a built-in scenario by name, or reads a scenario file when nameOrPath names one (it
// contains a path separator or ends in .yaml/.yml, or a file of that name exists).
func Load(nameOrPath string) (*File, error) {
	isPath := strings.ContainsRune(nameOrPath, os.PathSeparator) || strings.HasSuffix(nameOrPath, ".yaml") || strings.HasSuffix(nameOrPath, ".yml")
	if !isPath {
		if _, err := os.Stat(nameOrPath); err != nil {
			return Builtin(nameOrPath)
		}
	}
	data, err := fileerr.ReadBounded(nameOrPath, "scenario file", maxFileSize)
	if err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	return Parse(nameOrPath, data)
}
