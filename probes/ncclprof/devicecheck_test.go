//go:build cgo

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// On a GPU machine, scripts/device/run.sh's torch step runs a PyTorch job with the plugin and checks
// `xfertop attach --headless --json`'s report against what the job issued with
// scripts/device/check_attach.py. Here the checker reads reports of harness jobs, written in the
// job's format (scripts/device/torch_job.py) from what each harness rank says it issued, so that its
// expectations follow what attach really prints: it must pass on them and fail on a wrong list.

// issuedOp is one entry of torch_job.py's list.
type issuedOp struct {
	Op       string `json:"op"`
	Count    int64  `json:"count"`
	Dtype    string `json:"dtype"`
	ElemSize int64  `json:"elem_size"`
	Bytes    int64  `json:"bytes"`
	Peer     *int   `json:"peer,omitempty"`
}

// issuedList is one rank's file of torch_job.py.
type issuedList struct {
	Rank      int        `json:"rank"`
	WorldSize int        `json:"world_size"`
	Ops       []issuedOp `json:"ops"`
}

func float32Op(op string, nbytes int64) issuedOp {
	return issuedOp{Op: op, Count: nbytes / 4, Dtype: "float32", ElemSize: 4, Bytes: nbytes}
}

// asTorchJob turns what a harness rank printed into torch_job.py's terms: its all-reduces, its
// sends and receives, each launch's world-size AlltoAll sends and receives as one
// all_to_all_single of the whole buffer, and a one-rank ncclAlltoAll NCCL ran as a local copy as
// one all_to_all_single of its bytes.
func asTorchJob(t *testing.T, rank, world int, lines []string) []issuedOp {
	t.Helper()
	var out []issuedOp
	a2a := 0
	for _, x := range parseIssued(t, lines) {
		switch {
		case x.kind == "coll":
			out = append(out, float32Op("all_reduce", x.bytes))
		case x.kind == "local":
			if x.op != "all_to_all" {
				t.Fatalf("harness: a local copy of %s, which this test does not map", x.op)
			}
			out = append(out, float32Op("all_to_all_single", x.bytes))
		case x.api == "AlltoAll":
			if x.kind == "send" {
				if a2a%world == 0 {
					out = append(out, float32Op("all_to_all_single", x.bytes*int64(world)))
				}
				a2a++
			}
		default:
			op := float32Op(x.kind, x.bytes)
			peer := x.peer
			op.Peer = &peer
			out = append(out, op)
		}
	}
	return out
}

// harnessRun is one harness job of ranks processes (one communicator).
type harnessRun struct {
	ranks int
	args  []string
}

// attachReport runs `xfertop attach --headless --json` while the runs go one after the other, and
// returns its report and each rank's issued operations in torch_job.py's terms.
func attachReport(t *testing.T, world int, runs []harnessRun) ([]byte, [][]issuedOp) {
	t.Helper()
	bin := xfertop(t)
	sock := socketPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The runs follow each other closely; --linger ends the report only after the last.
	cmd := exec.CommandContext(ctx, bin, "attach", "--headless", "--json", "--socket", sock, "--linger", "3s")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the console's socket", func() bool { _, err := os.Stat(sock); return err == nil })
	issued := make([][]issuedOp, world)
	for _, r := range runs {
		for _, rr := range runRanks(t, r.ranks, []string{"XFERTOP_ATTACH=" + sock}, r.args...) {
			issued[rr.rank] = append(issued[rr.rank], asTorchJob(t, rr.rank, r.ranks, rr.lines)...)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("attach: %v\n%s", err, errb.String())
	}
	return out.Bytes(), issued
}

// checkAttach runs the checker on a report and the ranks' lists; it returns the exit status and
// what it printed.
func checkAttach(t *testing.T, report []byte, lists []issuedList) (int, string) {
	t.Helper()
	dir := t.TempDir()
	rep := filepath.Join(dir, "attach.json")
	if err := os.WriteFile(rep, report, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"../../scripts/device/check_attach.py", "--report", rep}
	for _, l := range lists {
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, fmt.Sprintf("issued-rank%d.json", l.Rank))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, p)
	}
	out, err := exec.Command("python3", args...).CombinedOutput()
	if err == nil {
		return 0, string(out)
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	t.Fatalf("python3 check_attach.py: %v", err)
	return -1, ""
}

func lists(world int, ops [][]issuedOp, edit func(rank int, ops []issuedOp) []issuedOp) []issuedList {
	out := make([]issuedList, world)
	for r := range world {
		o := append([]issuedOp(nil), ops[r]...)
		if edit != nil {
			o = edit(r, o)
		}
		out[r] = issuedList{Rank: r, WorldSize: world, Ops: o}
	}
	return out
}

func TestDeviceCheckerAgainstAttach(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not found: scripts/device/check_attach.py (run on GPU machines) is not checked here")
	}
	// Two ranks: grouped all-reduces, ncclAlltoAll, and a send/receive pair, each on its own
	// communicator, as a PyTorch job's default and point-to-point communicators.
	two, twoOps := attachReport(t, 2, []harnessRun{
		{2, []string{"-scenario", "allreduce", "-iters", "3", "-comm", "0x1111"}},
		{2, []string{"-scenario", "alltoall", "-iters", "2", "-comm", "0x2222"}},
		{2, []string{"-scenario", "sendrecv", "-iters", "2", "-comm", "0x3333", "-count", "2048"}},
	})
	// One rank: only its sends and receives to itself reach the plugin (NCCL runs a one-rank
	// collective as a local copy, ncclAlltoAll included, as the H200 run with NCCL 2.28.9 and
	// torch 2.11 showed), so the job's collectives and all-to-alls are expected absent from the report.
	one, oneOps := attachReport(t, 1, []harnessRun{
		{1, []string{"-scenario", "alltoall", "-iters", "2"}},
		{1, []string{"-scenario", "ring", "-iters", "2"}},
	})
	oneRankColls := func(_ int, ops []issuedOp) []issuedOp {
		return append(ops, float32Op("all_reduce", 4096), float32Op("all_gather", 8192), float32Op("broadcast", 16384))
	}
	cases := []struct {
		name   string
		report []byte
		lists  []issuedList
		code   int
		says   []string
	}{
		{"two ranks as issued", two, lists(2, twoOps, nil), 0, []string{"MATCH", "all_reduce", "send", "recv"}},
		{"one rank as issued, with its collectives", one, lists(1, oneOps, oneRankColls), 0,
			[]string{"MATCH", "1 rank: NCCL runs it as a local copy", "all_to_all"}},
		{"an all-reduce of other bytes", two, lists(2, twoOps, func(_ int, ops []issuedOp) []issuedOp {
			for i := range ops {
				if ops[i].Op == "all_reduce" {
					ops[i].Bytes *= 1000
					break
				}
			}
			return ops
		}), 1, []string{"MISMATCH", "issued, not reported"}},
		{"no all-to-all issued", two, lists(2, twoOps, func(_ int, ops []issuedOp) []issuedOp {
			return slices.DeleteFunc(ops, func(o issuedOp) bool { return o.Op == "all_to_all_single" })
		}), 1, []string{"MISMATCH", "reported, not issued"}},
		{"a send more than issued", one, lists(1, oneOps, func(_ int, ops []issuedOp) []issuedOp {
			peer := 0
			s := float32Op("send", 4096)
			s.Peer = &peer
			return append(ops, s)
		}), 1, []string{"MISMATCH"}},
		{"a rank's list missing", two, lists(2, twoOps, nil)[:1], 2, []string{"needs one issued list per rank 0..1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out := checkAttach(t, c.report, c.lists)
			t.Logf("check_attach.py, exit status %d:\n%s", code, out)
			if code != c.code {
				t.Errorf("exit status %d, want %d:\n%s", code, c.code, out)
			}
			for _, s := range c.says {
				if !strings.Contains(out, s) {
					t.Errorf("output lacks %q:\n%s", s, out)
				}
			}
		})
	}
}

// Two ranks of two NCCL hosts (NCCL_HOSTID, set by the job as torch_job.py --fake-hosts does) on
// one machine: attach names two hosts and puts their sends on NICs, not on one host's NVLink (as
// an H200 run of two such ranks over loopback sockets first reported).
func TestAttachHostsFromRanks(t *testing.T) {
	// The ranks name their hosts through their events: a first exchange lets attach hear
	// from both (an op whose peer it has not heard from yet is unattributed, not guessed).
	report, _ := attachReport(t, 2, []harnessRun{
		{2, []string{"-scenario", "ring", "-iters", "1", "-setenv", "NCCL_HOSTID=fake-host-{rank}"}},
		{2, []string{"-scenario", "sendrecv", "-iters", "2", "-count", "2048", "-setenv", "NCCL_HOSTID=fake-host-{rank}"}},
	})
	var r struct {
		Links struct {
			Devices []struct {
				Device int32  `json:"device"`
				NVLink *int64 `json:"nvlink_bytes"`
				NIC    *int64 `json:"nic_bytes"`
			} `json:"devices"`
		} `json:"links"`
	}
	if err := json.Unmarshal(report, &r); err != nil {
		t.Fatalf("report: %v\n%s", err, report)
	}
	if len(r.Links.Devices) != 2 {
		t.Fatalf("links of %d devices; want 2:\n%s", len(r.Links.Devices), report)
	}
	for _, d := range r.Links.Devices {
		// NVLink may read unknown (null): an op before attach heard from its peer is unattributed.
		if d.NIC == nil || *d.NIC == 0 || d.NVLink != nil && *d.NVLink != 0 {
			t.Errorf("device %d: NIC %s, NVLink %s bytes; want its sends on the NIC, none on NVLink", d.Device, orNull(d.NIC), orNull(d.NVLink))
		}
	}
}

func orNull(v *int64) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprint(*v)
}
