package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/engine/topology"
	"github.com/xfertop/xfertop/scenario"
	"github.com/xfertop/xfertop/session"
)

// Every built-in scenario either fits a built-in topology it is given (README's default h100x8,
// docs/topologies.md's a100x8 among them) or says which topology it was written for, and that one
// fits it.
func TestBuiltinScenariosFitOrSayWhatTheyNeed(t *testing.T) {
	for _, name := range scenario.BuiltinNames() {
		for _, topo := range topology.Names() {
			_, err := session.Prepare(session.Config{Scenario: name, Topology: topo, Steps: 1})
			if err == nil {
				continue
			}
			var ce *session.ConfigError
			f, ferr := scenario.Builtin(name)
			if ferr != nil {
				t.Fatal(ferr)
			}
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), "--topology "+f.Topology) {
				t.Errorf("%s on %s: %v; want a configuration error naming the topology it fits", name, topo, err)
			}
		}
	}
	for _, topo := range []string{topology.Default, "a100x8", "l40sx8", "h100x4"} {
		if _, err := session.Prepare(session.Config{Scenario: scenario.DefaultName, Topology: topo, Steps: 1}); err != nil {
			t.Errorf("the default scenario on %s: %v", topo, err)
		}
	}
}

// xfertop scenarios NAME --print prints the built-in's file, which runs as --scenario FILE once
// copied; an unknown name is a usage error listing the built-ins.
func TestScenariosPrint(t *testing.T) {
	for _, args := range [][]string{{"scenarios", "deadlock", "--print"}, {"scenarios", "deadlock"}} {
		var out, errb bytes.Buffer
		if code := xfertop(context.Background(), args, &out, &errb); code != exitOK || !strings.HasPrefix(out.String(), "name: deadlock\n") {
			t.Fatalf("%v: status %d\n%s%s", args, code, out.String(), errb.String())
		}
		p := filepath.Join(t.TempDir(), "mine.yaml")
		if err := os.WriteFile(p, []byte(strings.Replace(out.String(), "default: 2s", "default: 1s", 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		out.Reset()
		if code := xfertop(context.Background(), []string{"run", "--headless", "--scenario", p}, &out, &errb); !strings.Contains(out.String(), "waited 1.00 s") {
			t.Errorf("run --scenario %s: status %d\n%s%s", p, code, out.String(), errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := xfertop(context.Background(), []string{"scenarios", "nope", "--print"}, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), `unknown scenario "nope" (built-in: allreduce-sweep`) {
		t.Errorf("scenarios nope --print: status %d, %q", code, errb.String())
	}
}
