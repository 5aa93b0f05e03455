package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/engine/topology"
)

// README names every built-in topology.
func TestReadmeListsEveryTopology(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range topology.Names() {
		if !strings.Contains(string(readme), "`"+name+"`") {
			t.Errorf("README's topology list lacks %s", name)
		}
	}
}

// xfertop topologies lists a line per built-in; with a name it prints the file, which runs as
// --topology FILE once edited; a malformed file is a usage error naming file and line.
func TestTopologiesCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if code := xfertop(context.Background(), []string{"topologies"}, &out, &errb); code != exitOK {
		t.Fatalf("topologies: status %d, %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(topology.Names()) || !strings.Contains(out.String(), "l40sx8    1×8 L40S, pcie (gen4, 27.5GB/s), no NVLS") {
		t.Errorf("topologies:\n%s", out.String())
	}
	out.Reset()
	if code := xfertop(context.Background(), []string{"topologies", "h100x8x2"}, &out, &errb); code != exitOK || !strings.Contains(out.String(), "base: h100x8\n") {
		t.Fatalf("topologies h100x8x2: status %d\n%s", code, out.String())
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "mine.yaml")
	edited := strings.Replace(out.String(), "name: h100x8x2", "name: mine\nnics:\n  per_host: 16", 1)
	if err := os.WriteFile(p, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	args := []string{"run", "--headless", "--scenario", "allreduce-sweep", "--set", "min_bytes=1GiB", "--topology", p}
	if code := xfertop(context.Background(), args, &out, &errb); code != exitOK || !strings.Contains(out.String(), "topology mine (16 devices)") {
		t.Fatalf("run --topology %s: status %d\n%s%s", p, code, out.String(), errb.String())
	}
	if err := os.WriteFile(p, []byte("base: h100x8\nnvls: sometimes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	args = []string{"run", "--headless", "--topology", p}
	if code := xfertop(context.Background(), args, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), p+`:2: nvls: "sometimes" is not true or false`) {
		t.Errorf("run --topology bad.yaml: status %d, %q; want a usage error naming the line", code, errb.String())
	}
}
