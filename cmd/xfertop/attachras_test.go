package main

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/importers/ras/rastest"
)

// TestAttachRAS: attach --ras polls the job's RAS port (a fake one, on loopback, answering a hung
// job's state) beside the ranks' streams, and the report's findings name the dead rank and the
// failing one in RAS's communicator, as analyze of the same document does, and attach exits 3 as for any hang.
func TestAttachRAS(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "importers", "ras", "testdata", "hang.json"))
	if err != nil {
		t.Fatal(err)
	}
	srv := rastest.New(t, doc)
	srv.NoMonitor = true
	sock, done := attachInBackground(t, "--headless", "--json", "--linger", "300ms", "--ras", srv.Addr(), "--ras-interval", "50ms")
	rankStream(t, sock, 0, 2)
	rankStream(t, sock, 1, 2)
	r := <-done
	// RAS says rank 3 is dead and the ranks' counts disagree: a hung job, exit 3 as for any hang.
	if r.code != exitAlert || !strings.Contains(r.err, "hang finding(s)") {
		t.Fatalf("status %d, stderr %q; want %d and the hang findings counted", r.code, r.err, exitAlert)
	}
	var rep struct {
		Findings []struct {
			Kind     string `json:"kind"`
			Rank     *int32 `json:"rank"`
			Comm     uint32 `json:"comm"`
			Evidence string `json:"evidence"`
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, r.out)
	}
	found := map[string]bool{}
	for _, f := range rep.Findings {
		if f.Rank != nil && f.Comm == rasCommBase+1 && strings.HasPrefix(f.Evidence, "RAS: communicator 0x7f8c496ae9f661") {
			found[f.Kind+" "+string(rune('0'+*f.Rank))] = true
		}
	}
	if !found["dead rank 3"] || !found["rank error 2"] {
		t.Errorf("findings %+v; want RAS's dead rank 3 and rank error 2 on communicator %d", rep.Findings, rasCommBase+1)
	}
	if cmds := srv.Commands(); len(cmds) == 0 || strings.Join(cmds[0], "|") != "CLIENT PROTOCOL 2|SET FORMAT json|VERBOSE STATUS" &&
		strings.Join(cmds[0], "|") != "CLIENT PROTOCOL 2|SET FORMAT json|MONITOR lifecycle" {
		t.Errorf("RAS commands %q; want ncclras's handshake", cmds)
	}
}

// TestAttachRASUsage: --ras wants HOST:PORT.
func TestAttachRASUsage(t *testing.T) {
	code, _, errs := runCLI(t, "attach", "--headless", "--ras", "localhost")
	if code != exitUsage || !strings.Contains(errs, `--ras "localhost": want HOST:PORT, e.g. localhost:28028`) {
		t.Errorf("status %d, stderr %q; want a usage error asking for HOST:PORT", code, errs)
	}
}

// TestAttachRASUnreachable: a --ras port nothing listens on is said to be unreachable, on stderr
// and in the report beside its findings: the report once read "Findings: none" with nothing on
// stderr, which reads as a healthy job.
func TestAttachRASUnreachable(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := lis.Addr().String()
	lis.Close() // the port was free a moment ago and nothing listens on it now
	sock, done := attachInBackground(t, "--headless", "--linger", "300ms", "--ras", dead, "--ras-interval", "50ms")
	rankStream(t, sock, 0, 2)
	r := <-done
	want := "NCCL RAS at " + dead + " could not be reached"
	if !strings.Contains(r.err, "warning: "+want) {
		t.Errorf("stderr %q; want the warning %q", r.err, want)
	}
	if !strings.Contains(r.out, "WARNING: "+want) || !strings.Contains(r.out, "no finding from it is no sign of health") {
		t.Errorf("the report does not say RAS was unreachable:\n%s", r.out)
	}
}
