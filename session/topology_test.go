package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/scenario"
)

// The topology a run uses: --topology (name or path) over the scenario's, whose relative path is
// relative to the scenario file; errors say where the bad name came from.
func TestLoadTopology(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "box.yaml"), []byte("base: a100x8\nname: box\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sc := &scenario.File{Source: filepath.Join(dir, "work.yaml"), Topology: "box.yaml"}
	tests := []struct {
		name string
		file *scenario.File
		flag string
		want string
		err  string
	}{
		{"scenario's relative path", sc, "", "box", ""},
		{"flag over scenario", sc, "h200x8", "h200x8", ""},
		{"flag path", &scenario.File{Source: "builtin:pipeline"}, filepath.Join(dir, "box.yaml"), "box", ""},
		{"default", &scenario.File{Source: "builtin:x"}, "", "h100x8", ""},
		{"bad flag", sc, "h900", "", `--topology: unknown topology "h900"`},
		{"bad scenario topology", &scenario.File{Source: "s.yaml", Topology: "h900"}, "", "", `s.yaml: topology: unknown topology "h900"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tp, err := loadTopology(tc.file, tc.flag)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("loadTopology = %v; want %q", err, tc.err)
				}
				return
			}
			if err != nil || tp.Name != tc.want {
				t.Errorf("loadTopology = %q, %v; want %q", tp.Name, err, tc.want)
			}
		})
	}
}
