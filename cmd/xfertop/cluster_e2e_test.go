package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The real binary on 32 hosts of 8 GPUs: the cluster view drills from a host to its GPUs to a GPU's
// streams and into the timeline, and esc comes back the same way, the breadcrumb saying where.
func TestClusterDrillEndToEnd(t *testing.T) {
	bin := buildBinary(t)
	topo := filepath.Join(t.TempDir(), "h32.yaml")
	if err := os.WriteFile(topo, []byte("base: h100x8x4\nhosts: 32\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startTmux(t, 160, 45, bin+" --scenario allreduce-sweep --topology "+topo+" --speed 0; echo XFERTOP_EXIT=$?; sleep 30")
	s.waitFor("1 Overview", 10*time.Second)
	s.keys("8")
	s.waitFor("cluster (32 hosts × 8 GPUs)", 5*time.Second)
	s.keys("j", "j", "l", "Enter") // host 2, its GPU 1
	s.waitFor("cluster (32 hosts × 8 GPUs) › host 2   esc: back", 5*time.Second)
	s.keys("Enter")
	s.waitFor("› host 2 › gpu 17", 5*time.Second)
	s.waitFor("transfer", 5*time.Second) // its stream listed
	s.keys("Enter")
	tl := s.waitFor("device 17", 5*time.Second)
	if !strings.Contains(tl, "/col") {
		t.Fatalf("enter on a stream did not show the timeline:\n%s", tl)
	}
	s.keys("Escape")
	s.waitFor("› host 2 › gpu 17", 5*time.Second)
	s.keys("Escape")
	scr := s.waitFor("› host 2   esc: back", 5*time.Second)
	if strings.Contains(scr, "gpu 17") {
		t.Errorf("esc from the GPU did not go up to the host:\n%s", scr)
	}
	s.keys("Escape")
	s.waitFor("worst GPUs", 5*time.Second)
	s.keys("q")
	s.waitFor("XFERTOP_EXIT=0", 10*time.Second)
	s.restored()
}
