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
	list, footer, _ := strings.Cut(out.String(), "\n\n")
	lines := strings.Split(strings.TrimSpace(list), "\n")
	if len(lines) != len(topology.Names()) || !strings.Contains(out.String(), "l40sx8    1×8 L40S, pcie (gen4, 27.5GB/s), no NVLS") {
		t.Errorf("topologies:\n%s", out.String())
	}
	if !strings.Contains(footer, "--topology h100x8x2 --hosts 512") {
		t.Errorf("topologies does not say how to pick a size:\n%s", footer)
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

// --hosts scales the chosen topology to any number of hosts without a file; a size beyond the
// limits, or a negative one, is a usage error naming the flag.
func TestRunHosts(t *testing.T) {
	var out, errb bytes.Buffer
	args := []string{"run", "--headless", "--scenario", "allreduce-sweep", "--set", "min_bytes=1MiB", "--set", "max_bytes=1MiB", "--topology", "h100x8x2", "--hosts", "16"}
	if code := xfertop(context.Background(), args, &out, &errb); code != exitOK || !strings.Contains(out.String(), "topology h100x8x2-16hosts (128 devices)") {
		t.Fatalf("run --hosts 16: status %d\n%s%s", code, out.String(), errb.String())
	}
	for _, tc := range []struct{ hosts, want string }{
		{"2000", "--hosts 2000: topology h100x8x2: 2000 out of range (1 to 1024)"},
		{"-1", "--hosts -1: must be positive"},
	} {
		errb.Reset()
		args := []string{"run", "--headless", "--topology", "h100x8x2", "--hosts", tc.hosts}
		if code := xfertop(context.Background(), args, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("run --hosts %s: status %d, %q; want a usage error containing %q", tc.hosts, code, errb.String(), tc.want)
		}
	}
}
