package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/importers/ras"
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

// A peer that answers something other than NCCL RAS is quoted by its first bytes and its length,
// not whole, and the greeting is said as it was sent.
func TestRASErrText(t *testing.T) {
	long := strings.Repeat("Y\x97\x80]", 600)
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"garbage", &ras.ProtocolError{Addr: "h:1", Sent: "CLIENT PROTOCOL", Got: long},
			fmt.Sprintf(`NCCL RAS at h:1: sent "CLIENT PROTOCOL %d", got %q… (2400 bytes: not NCCL RAS)`, ras.ClientProtocol, long[:rasQuoteMax])},
		{"short answer", &ras.ProtocolError{Addr: "h:1", Sent: "SET FORMAT json", Got: "ERROR unknown"},
			`NCCL RAS at h:1: sent "SET FORMAT json", got "ERROR unknown"`},
		{"wrapped", fmt.Errorf("%w: the job's NCCL writes no JSON", &ras.ProtocolError{Addr: "h:1", Sent: "SET FORMAT json", Got: long}),
			fmt.Sprintf(`NCCL RAS at h:1: sent "SET FORMAT json", got %q… (2400 bytes: not NCCL RAS): the job's NCCL writes no JSON`, long[:rasQuoteMax])},
		{"other", errors.New("dial tcp: connection refused"), "dial tcp: connection refused"},
	} {
		if got := rasErrText(c.err); got != c.want {
			t.Errorf("%s: rasErrText = %q; want %q", c.name, got, c.want)
		}
	}
}

// A garbage peer, end to end: the warning stays short.
func TestAttachRASGarbagePeer(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte(strings.Repeat("\x97garbage\x80", 300) + "\n"))
			_ = c.Close()
		}
	}()
	sock, done := attachInBackground(t, "--headless", "--linger", "300ms", "--ras", lis.Addr().String(), "--ras-interval", "50ms")
	rankStream(t, sock, 0, 2)
	r := <-done
	var line string
	for _, l := range strings.Split(r.err, "\n") {
		if strings.Contains(l, "NCCL RAS at") {
			line = l
			break
		}
	}
	if !strings.Contains(line, "(2700 bytes: not NCCL RAS)") || len(line) > 600 {
		t.Errorf("warning %q (%d bytes); want the answer's first bytes and its length", line, len(line))
	}
}
