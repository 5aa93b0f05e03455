package join

import (
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is the import path every package of the project starts with.
const module = "github.com/xfertop/xfertop"

// layerRule says that a package (and those under it) must not import another (or those under it),
// directly or through anything it imports.
type layerRule struct {
	from, not string // module-relative paths: "importers" is importers and importers/...
	why       string
}

// layers are the floors of the project's imports that run one way only: the importers of other
// tools' formats and the live attach both stand on join, which stands on recordings.
var layers = []layerRule{
	{"importers", "attach", "the importers merge per-rank recordings through join, never through the live console"},
	{"recordings", "importers", "recordings is xfertop's own format alone; the importers read it, not the other way"},
	{"recordings", "join", "join reads recordings"},
	{"recordings", "attach", "attach reads recordings"},
	{"join", "attach", "join sits below the live console that uses it"},
	{"join", "importers", "join sits below the importers that use it"},
	{"join", "probes", "join sits below the plugin's folder, which labels its posting marks with join.PostedLabel"},
	{"attach", "probes", "the console does not link the plugin's code; what they share is in join"},
	{"attach", "importers", "the console reads its ranks' streams, not other tools' files"},
}

// under reports whether path is the module's package rel or one under it.
func under(path, rel string) bool {
	p := module + "/" + rel
	return path == p || strings.HasPrefix(path, p+"/")
}

// pkgInfo is what go list says of one of the module's packages.
type pkgInfo struct {
	deps        []string // every package it imports, transitively (its own code, not its tests)
	testImports []string // what its own test files (package p, not p_test) import directly
}

// violations returns, for each package that breaks a rule, what it reaches that it must not, and
// through which import: its own code's, or its internal tests'. External test packages (p_test)
// are consumers of p like any other and may import what they like.
func violations(pkgs map[string]pkgInfo, rules []layerRule) []string {
	var out []string
	names := make([]string, 0, len(pkgs))
	for p := range pkgs {
		names = append(names, p)
	}
	slices.Sort(names)
	for _, p := range names {
		info := pkgs[p]
		for _, r := range rules {
			if !under(p, r.from) {
				continue
			}
			for _, d := range info.deps {
				if under(d, r.not) {
					out = append(out, p+" imports "+d+" ("+r.why+")")
				}
			}
			for _, ti := range info.testImports {
				reach := append([]string{ti}, pkgs[ti].deps...)
				for _, d := range reach {
					if under(d, r.not) {
						out = append(out, p+"'s tests import "+d+" through "+ti+" ("+r.why+")")
					}
				}
			}
		}
	}
	return out
}

// listModule asks go list for the deps and internal test imports of every package of the module.
func listModule(t *testing.T) map[string]pkgInfo {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go command is not on PATH, so the imports cannot be listed: %v", err)
	}
	cmd := exec.Command(goTool, "list", "-e", "-f", "{{.ImportPath}}|{{join .Deps \",\"}}|{{join .TestImports \",\"}}|{{with .Error}}{{.Err}}{{end}}", module+"/...")
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]pkgInfo{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 4 {
			t.Fatalf("go list: unexpected line %q", line)
		}
		if f[3] != "" {
			t.Fatalf("go list: %s: %s", f[0], f[3])
		}
		pkgs[f[0]] = pkgInfo{deps: split(f[1]), testImports: split(f[2])}
	}
	return pkgs
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// TestNoImportRunsBackUp: no package imports, directly or not, one on a floor above it.
func TestNoImportRunsBackUp(t *testing.T) {
	pkgs := listModule(t)
	for _, p := range []string{"join", "attach", "recordings", "importers", "importers/kineto", "importers/nsys"} {
		if _, ok := pkgs[module+"/"+p]; !ok {
			t.Fatalf("go list did not list %s: the rules below would check nothing", p)
		}
	}
	for _, v := range violations(pkgs, layers) {
		t.Error(v)
	}
}

// TestLayerViolations: the check finds an import that runs back up, directly, through another
// package, or from a package's own tests; and lets through what runs down.
func TestLayerViolations(t *testing.T) {
	m := func(p string) string { return module + "/" + p }
	tests := []struct {
		name string
		pkgs map[string]pkgInfo
		want int
	}{
		{"down only", map[string]pkgInfo{
			m("importers"):  {deps: []string{m("join"), m("recordings"), m("timeline")}},
			m("attach"):     {deps: []string{m("join"), m("recordings")}},
			m("join"):       {deps: []string{m("recordings"), m("timeline")}},
			m("recordings"): {deps: []string{m("timeline")}},
		}, 0},
		{"an importer imports attach", map[string]pkgInfo{
			m("importers/kineto"): {deps: []string{m("attach"), m("join")}},
		}, 1},
		{"join imports the plugin's folder", map[string]pkgInfo{
			m("join"): {deps: []string{m("probes/ncclprof/fold"), m("recordings")}},
		}, 1},
		{"recordings reaches the importers through another package", map[string]pkgInfo{
			m("recordings"): {deps: []string{m("session"), m("importers/kineto")}},
		}, 1},
		{"recordings' own tests import an importer", map[string]pkgInfo{
			m("recordings"):       {testImports: []string{m("importers/chrome")}},
			m("importers/chrome"): {deps: []string{m("timeline")}},
		}, 1},
		{"a name that only starts like a floor", map[string]pkgInfo{
			m("importers"): {deps: []string{m("attachments")}},
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := violations(tt.pkgs, layers); len(got) != tt.want {
				t.Errorf("violations: %q; want %d", got, tt.want)
			}
		})
	}
}
