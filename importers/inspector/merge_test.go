package inspector

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeJob writes one v4.3 log per rank of an n-rank job (communicator comm, five all-reduces,
// rank late entering each 20 ms late) into dir, named nodeH-pidP.log, and returns the paths.
func writeJob(t *testing.T, dir, comm string, n, late int) []string {
	t.Helper()
	const t0 = 1764230400000000
	var paths []string
	for r := range n {
		var b strings.Builder
		fmt.Fprintf(&b, `{"header":{"id":%q,"comm_name":"default_pg","rank":%d,"n_ranks":%d,"nnodes":%d},"metadata":{"inspector_output_format_version":"v4.3","git_rev":"","rec_mechanism":"nccl_profiler_interface","dump_timestamp_us":%d,"hostname":"node%d","pid":%d},"dump_stats":{"coll_records":5,"coll_dropped_total":0,"coll_dropped_since_last_dump":0,"p2p_records":0,"p2p_dropped_total":0,"p2p_dropped_since_last_dump":0,"proxy_records":0}}`+"\n",
			comm, r, n, max(n/8, 1), t0+700000, r/8, 1000+r)
		for sn := 1; sn <= 5; sn++ {
			l := 0
			if r == late {
				l = 20000
			}
			ex := 9500 + 20000 - l
			s := t0 + sn*100000 + 2000 + l
			fmt.Fprintf(&b, `{"coll_perf":{"coll":"AllReduce","coll_algo":"RING","coll_proto":"SIMPLE","coll_sn":%d,"coll_msg_size_bytes":4194304,"coll_exec_time_us":%d,"coll_timing_source":"kernel_gpu","coll_algobw_gbs":1,"coll_busbw_gbs":2,"event_trace_sn":{"coll_start_sn":1,"coll_stop_sn":2,"kernel_events":[{"channel_id":0,"kernel_start_sn":3,"kernel_stop_sn":10,"kernel_record_sn":9}]},"event_trace_ts":{"coll_start_ts":%d,"coll_stop_ts":%d,"kernel_events":[{"channel_id":0,"kernel_start_ts":%d,"kernel_stop_ts":%d,"kernel_record_ts":%d}]}}}`+"\n",
				sn, ex, s, s+5, s+100, s+100+ex, s+100+ex)
		}
		p := filepath.Join(dir, fmt.Sprintf("node%d-pid%d.log", r/8, 1000+r))
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// TestOneRankTwice: a log of one rank from another process (a restarted one, its pid changed)
// is refused, naming both files and the rank, not merged as a rank too many.
func TestOneRankTwice(t *testing.T) {
	dir := t.TempDir()
	paths := writeJob(t, dir, "0x7f8c496ae9f661", 16, 13)
	b, err := os.ReadFile(paths[10])
	if err != nil {
		t.Fatal(err)
	}
	write := filepath.Join(dir, "node1-pid5555.log")
	if err := os.WriteFile(write, []byte(strings.Replace(string(b), `"pid":1010`, `"pid":5555`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadFiles([]string{dir}, Options{})
	if err == nil {
		t.Fatal("two logs of rank 10 from two processes read; want an error naming both")
	}
	for _, want := range []string{"node1-pid1010.log", "node1-pid5555.log", "both hold rank 10 of communicator 0x7f8c496ae9f661"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q; want it to name %q", err, want)
		}
	}
}

// TestFileLeftOut: one file of another job, or one damaged in its middle, among a job's logs is
// left out with a warning naming it and the line; the rest are read, the straggler still found.
// Only when no file is left is the import refused.
func TestFileLeftOut(t *testing.T) {
	cases := []struct {
		name   string
		spoil  func(t *testing.T, dir string, paths []string) // makes one file bad
		warned string
	}{
		{"log of another job", func(t *testing.T, dir string, paths []string) {
			other := t.TempDir()
			op := writeJob(t, other, "0x7f8c496ae9f661", 32, -1)
			b, err := os.ReadFile(op[20])
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "node2-pid1020.log"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "node2-pid1020.log:2: communicator 0x7f8c496ae9f661 has 32 ranks here, where 16 other files say it has 16: a log of another job? (left out)"},
		{"garbled line", func(t *testing.T, dir string, paths []string) {
			b, err := os.ReadFile(paths[2])
			if err != nil {
				t.Fatal(err)
			}
			ls := strings.SplitAfter(string(b), "\n")
			ls[2] = "{garbled\n"
			if err := os.WriteFile(paths[2], []byte(strings.Join(ls, "")), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "node0-pid1002.log:3 (byte"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			paths := writeJob(t, dir, "0x7f8c496ae9f661", 16, 13)
			c.spoil(t, dir, paths)
			var calls, total int64
			im, err := ReadFiles([]string{dir}, Options{Progress: func(_, n int64) { calls, total = calls+1, n }})
			if err != nil {
				t.Fatal(err)
			}
			if calls != total || total == 0 {
				t.Errorf("progress told of %d of %d files; want every file counted, the one left out too", calls, total)
			}
			if !slices.ContainsFunc(im.Warnings, func(w string) bool { return strings.Contains(w, c.warned) }) {
				t.Errorf("warnings %q; want one containing %q", im.Warnings, c.warned)
			}
			if !strings.Contains(im.Extra["inspector.devices"], "ranks of communicator 0x7f8c496ae9f661 (16 ranks)") {
				t.Errorf("devices numbered by %q; want the communicator's 16 ranks", im.Extra["inspector.devices"])
			}
		})
	}
	t.Run("nothing left", func(t *testing.T) {
		dir := t.TempDir()
		p := filepath.Join(dir, "node0-pid1.log")
		if err := os.WriteFile(p, []byte("{garbled\n{\"x\":1}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadFiles([]string{dir}, Options{}); err == nil || !strings.Contains(err.Error(), "node0-pid1.log: not an NCCL Inspector log") {
			t.Errorf("error %v; want the file's, naming it and its line", err)
		}
	})
}
