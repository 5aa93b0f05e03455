package inspector

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/timeline"
)

// TestVersions reads each NCCL version's fixture (testdata/v2.*: two ranks on two hosts of one
// two-rank communicator, written in that version's Inspector field set) and checks every event.
func TestVersions(t *testing.T) {
	const gib, mib16 = 1 << 30, 1 << 24
	type want struct {
		kind       timeline.Kind
		sub        timeline.CollOp
		dev, peer  int32
		bytes, dur int64
		algoProto  string
		channels   int
		label      string
	}
	ar := func(dev int32, ap string, ch int) want {
		return want{timeline.KindCollective, timeline.CollAllReduce, dev, -1, gib, 10_000_000, ap, ch, "inspector: busbw 107.37 GB/s algbw 107.37 GB/s (kernel_gpu)"}
	}
	ag := func(dev int32, ap string, ch int) want {
		return want{timeline.KindCollective, timeline.CollAllGather, dev, -1, mib16, 200_000, ap, ch, "inspector: busbw 41.94 GB/s algbw 83.89 GB/s (kernel_gpu)"}
	}
	p2p := func(k timeline.Kind, dev, peer int32) want {
		return want{k, 0, dev, peer, 1 << 20, 50_000, "", 0, "inspector: busbw 20.97 GB/s algbw 20.97 GB/s (kernel_gpu)"}
	}
	cases := []struct {
		dir      string
		want     []want // in (device, kind, op) order
		untimed  int    // warnings' count of records placed without timestamps
		warnings []string
	}{
		{"v2.28", []want{ar(0, "", 0), ag(0, "", 0), ar(1, "", 0), ag(1, "", 0)}, 4, nil},
		{"v2.30", []want{ar(0, "", 2), ag(0, "", 2), ar(1, "", 2), ag(1, "", 2)}, 0, nil},
		{"v2.31", []want{ar(0, "Ring_Simple", 2), ag(0, "NVLSTree_LL128", 2), p2p(timeline.KindSend, 0, 1),
			ar(1, "Ring_Simple", 2), ag(1, "NVLSTree_LL128", 2), p2p(timeline.KindRecv, 1, 0)}, 2, []string{"overwrote 6 records"}},
		{"v2.32", []want{ar(0, "Ring_Simple", 2), ag(0, "NVLSTree_LL128", 2), p2p(timeline.KindSend, 0, 1),
			ar(1, "Ring_Simple", 2), ag(1, "NVLSTree_LL128", 2), p2p(timeline.KindRecv, 1, 0)}, 2, []string{"overwrote 6 records", "2 proxy trace records left out"}},
	}
	for _, c := range cases {
		t.Run(c.dir, func(t *testing.T) {
			im, err := ReadFiles([]string{filepath.Join("testdata", c.dir)}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if im.Devices != 2 || im.Format != Format {
				t.Errorf("Devices, Format = %d, %q; want 2, %q", im.Devices, im.Format, Format)
			}
			var got []timeline.Event
			for dev := int32(0); dev < 2; dev++ {
				for _, e := range im.Events {
					if e.Device == dev {
						got = append(got, e)
					}
				}
			}
			if len(got) != len(c.want) {
				t.Fatalf("%d events; want %d", len(got), len(c.want))
			}
			for i, w := range c.want {
				e := got[i]
				_, _, ch := e.NCCLChoice()
				g := want{e.Kind, timeline.CollOp(e.Sub), e.Device, e.Peer, e.Bytes, e.Dur(), e.AlgoProto(), ch, im.Strings.Lookup(e.Label)}
				if e.Kind != timeline.KindCollective {
					g.sub, g.algoProto, g.channels = 0, "", 0
				}
				if g != w {
					t.Errorf("event %d = %+v; want %+v", i, g, w)
				}
				if e.Comm != 1 || e.Ranks != 2 || int(e.Host) != int(e.Device) {
					t.Errorf("event %d: comm %d ranks %d host %d; want 1, 2, its device", i, e.Comm, e.Ranks, e.Host)
				}
			}
			for i := 1; i < len(im.Events); i++ {
				if im.Events[i].Start < im.Events[i-1].Start {
					t.Fatalf("events out of start order at %d", i)
				}
			}
			all := strings.Join(im.Warnings, "\n")
			if c.untimed > 0 != strings.Contains(all, "no kernel timestamps") {
				t.Errorf("warnings %q: untimed records said %v; want %v", all, !(c.untimed > 0), c.untimed > 0)
			}
			for _, w := range c.warnings {
				if !strings.Contains(all, w) {
					t.Errorf("warnings %q lack %q", all, w)
				}
			}
		})
	}
}

// TestVerboseTimes checks that a verbose record starts at its first channel's kernel start
// (v2.30: rank 1's kernels start 3 µs after rank 0's) and is queued at its host start.
func TestVerboseTimes(t *testing.T) {
	im, err := ReadFiles([]string{"testdata/v2.30"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	starts := map[int32]int64{}
	for _, e := range im.Events {
		if e.Sub == uint8(timeline.CollAllReduce) {
			starts[e.Device] = e.Start
			if e.Queued != e.Start-100_000 {
				t.Errorf("device %d: queued %d; want start−100 µs (%d)", e.Device, e.Queued, e.Start-100_000)
			}
		}
	}
	if d := starts[1] - starts[0]; d != 3000 {
		t.Errorf("rank 1 starts %d ns after rank 0; want 3000", d)
	}
}

// TestPrometheus reads a Prometheus dump: one operation per series.
func TestPrometheus(t *testing.T) {
	im, err := ReadFiles([]string{"testdata/prom"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Events) != 2 {
		t.Fatalf("%d events; want 2", len(im.Events))
	}
	for _, e := range im.Events {
		switch e.Kind {
		case timeline.KindCollective:
			if e.Bytes != 4<<30 || e.Dur() != 9_498_470 || e.AlgoProto() != "Ring_LL" || e.Ranks != 4 {
				t.Errorf("all_reduce = %d B, %d ns, %q, %d ranks; want 4 GiB, 9498470 ns, Ring_LL, 4", e.Bytes, e.Dur(), e.AlgoProto(), e.Ranks)
			}
			if l := im.Strings.Lookup(e.Label); !strings.Contains(l, "busbw 678.26 GB/s") {
				t.Errorf("label %q lacks Inspector's busbw", l)
			}
		case timeline.KindSend:
			if e.Bytes != 512<<20 || e.Dur() != 1_154_870 {
				t.Errorf("send = %d B, %d ns; want 512 MiB, 1154870 ns", e.Bytes, e.Dur())
			}
		default:
			t.Errorf("unexpected %v", e.Kind)
		}
	}
}

// TestBadInput checks that broken and hostile files are errors naming the file and line.
func TestBadInput(t *testing.T) {
	good := `{"header":{"id":"0x1","rank":0,"n_ranks":2,"nnodes":1},"metadata":{"inspector_output_format_version":"v4.0","dump_timestamp_us":1752867229000000,"hostname":"h","pid":1},"coll_perf":{"coll":"AllReduce","coll_sn":1,"coll_msg_size_bytes":8192,"coll_exec_time_us":10}}`
	marker := `{"header":{"id":"0x1","rank":0,"n_ranks":2,"nnodes":1},"metadata":{"inspector_output_format_version":"v4.3","dump_timestamp_us":1752867229000000,"hostname":"h","pid":1},"dump_stats":{"coll_records":1,"p2p_records":0}}`
	cases := []struct {
		name, body, want string
		limit            bool
	}{
		// The byte named is the bad one ('o', the line's second), not the line's first.
		{"bad json first", "{oops\n" + good + "\n", "x.log:1 (byte 1): not an NCCL Inspector record", false},
		{"orphan v4.3 line", good + "\n" + `{"coll_perf":{"coll":"AllReduce","coll_sn":2}}` + "\n", "x.log:2: an operation without its header", false},
		{"unknown collective", strings.Replace(good, "AllReduce", "Shuffle", 1) + "\n", `x.log:1: collective "Shuffle"`, false},
		{"rank outside", strings.Replace(good, `"rank":0`, `"rank":5`, 1) + "\n", "x.log:1: header's n_ranks 2", false},
		{"negative size", strings.Replace(good, "8192", "-1", 1) + "\n", "x.log:1: negative message size", false},
		{"interleaved dumps", marker + "\n" + marker + "\n", "x.log:2: a dump marker while 1 records", false},
		{"long line", good + "\n" + `{"x":"` + strings.Repeat("a", 2000) + `"}` + "\n", "x.log:2: more than 1024 bytes in one line", true},
		{"too many", strings.Repeat(good+"\n", 5), "x.log:4: more than 3 operations", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "x.log")
			if err := os.WriteFile(p, []byte(c.body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadFiles([]string{p}, Options{MaxLineBytes: 1024, MaxRecords: 3})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("ReadFiles = %v; want an error containing %q", err, c.want)
			}
			var le *LimitError
			if errors.As(err, &le) != c.limit {
				t.Errorf("error %v: LimitError %v; want %v", err, !c.limit, c.limit)
			}
		})
	}
}

// In a gzipped log, the byte offset of a bad line counts the decompressed bytes, and says so (in
// the warning that leaves the line out).
func TestGzippedOffsets(t *testing.T) {
	good := `{"header":{"id":"0x1","rank":0,"n_ranks":2,"nnodes":1},"metadata":{"inspector_output_format_version":"v4.0","dump_timestamp_us":1752867229000000,"hostname":"h","pid":1},"coll_perf":{"coll":"AllReduce","coll_sn":1,"coll_msg_size_bytes":8192,"coll_exec_time_us":10}}`
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(good + "\n{oops\n"))
	zw.Close()
	p := filepath.Join(t.TempDir(), "x.log.gz")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("x.log.gz:2 (byte %d of the decompressed data): not an NCCL Inspector record", len(good)+2)
	im, err := ReadFiles([]string{p}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(im.Warnings, "\n"); !strings.Contains(w, want) {
		t.Fatalf("warnings %q; want one containing %q", w, want)
	}
}

// TestTornTail keeps a log's records before a cut last line, and warns.
func TestTornTail(t *testing.T) {
	b, err := os.ReadFile("testdata/v2.28/node0-pid1000.log")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "cut.log")
	if err := os.WriteFile(p, b[:len(b)-40], 0o644); err != nil {
		t.Fatal(err)
	}
	im, err := ReadFiles([]string{p}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Events) != 1 || !strings.Contains(strings.Join(im.Warnings, "\n"), "cut.log:2: the last line is cut") {
		t.Errorf("%d events, warnings %q; want 1 and the cut line named", len(im.Events), im.Warnings)
	}
}

// TestSniff tells Inspector's files from other JSON and text.
func TestSniff(t *testing.T) {
	cases := []struct {
		head string
		want Kind
	}{
		{`{"header":{"id":"0x1"},"metadata":{"inspector_output_format_version":"v4.0"`, JSONLines},
		{`{"coll_perf":{"coll":"AllReduce"`, JSONLines},
		{`{"traceEvents":[`, NotInspector},
		{"# HELP nccl_bus_bandwidth_gbs x\n", Prometheus},
		{`nccl_bus_bandwidth_gbs{gpu="GPU0"} 1`, Prometheus},
		{"# HELP node_cpu x\nnode_cpu 1\n", NotInspector},
		{"", NotInspector},
	}
	for _, c := range cases {
		if got := Sniff([]byte(c.head)); got != c.want {
			t.Errorf("Sniff(%q) = %v; want %v", c.head, got, c.want)
		}
	}
	gz, err := os.ReadFile("testdata/v2.30/node0-pid1000.log.gz")
	if err != nil {
		t.Fatal(err)
	}
	if got := Sniff(gz[:min(len(gz), 512)]); got != JSONLines {
		t.Errorf("Sniff(gzipped log) = %v; want JSONLines", got)
	}
}

// FuzzRead feeds arbitrary logs and dumps to the reader: it returns events or an error, never
// panics, and never more events than the bound.
func FuzzRead(f *testing.F) {
	for _, p := range []string{"testdata/v2.28/node0-pid1000.log", "testdata/v2.31/node0-pid1000.log", "testdata/v2.32/node1-pid1001.log",
		"testdata/prom/nccl_inspector_metrics_GPU-0.prom"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, c := range damaged {
		f.Add([]byte(c.body))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "f.log")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		im, err := ReadFiles([]string{p}, Options{MaxLineBytes: 4096, MaxRecords: 64})
		if err == nil && len(im.Events) > 64 {
			t.Fatalf("%d events past the bound of 64", len(im.Events))
		}
	})
}

// TestPrometheusReport: a series is one GPU's aggregate, so the analysis takes it as a whole
// collective (its busbw Inspector's own), not as one rank's part waiting for three others; and a
// series of n_nodes="1" (or a log record of nnodes 1) puts its bus bytes on NVLink, not on links
// "across hosts".
func TestPrometheusReport(t *testing.T) {
	for _, c := range []struct {
		path   string
		op     string
		ranks  int
		busbw  float64
		nvlink bool // its bus bytes on NVLink; else across hosts (unattributed)
	}{
		{"testdata/prom", "all_reduce", 4, 678.26, true},
		{"testdata/v2.32", "all_reduce", 2, 107.37, false}, // nnodes 2
	} {
		t.Run(c.path, func(t *testing.T) {
			im, err := ReadFiles([]string{c.path}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			a := analysis.New(timeline.Meta{Backend: Format, Devices: im.Devices})
			for i := range im.Events {
				a.Emit(&im.Events[i])
			}
			r := a.Result(im.Strings)
			var row *analysis.Collective
			for i := range r.Collectives.Rows {
				if x := &r.Collectives.Rows[i]; x.Op == c.op && x.Ranks == c.ranks {
					row = x
				}
			}
			if row == nil || row.BusBW == nil || *row.BusBW != c.busbw {
				t.Fatalf("collectives %+v (open %d); want a %s row of %d ranks at busbw %.2f", r.Collectives.Rows, r.Collectives.Open, c.op, c.ranks, c.busbw)
			}
			var unattributed int64
			for _, d := range r.Links.Devices {
				unattributed += d.Unattributed
			}
			if (unattributed == 0) != c.nvlink {
				t.Errorf("%d bytes on links across hosts; want them on NVLink: %v", unattributed, c.nvlink)
			}
		})
	}
}

// damaged are logs and dumps with one bad value or a cut end, and what the import makes of them:
// the rest is read, and a warning names the file, line and what became of the bad part.
var damaged = []struct {
	name, file, body string
	events           int    // events read; -1: the import fails
	want             string // in a warning (or, when it fails, the error)
}{
	{"size past int64", "x.log", strings.Replace(goodLog, "8192", "999999999999999999999", 1) + "\n" + goodLog2 + "\n", 1,
		"x.log:1: coll_perf.coll_msg_size_bytes number 999999999999999999999 is out of range (int64): record left out"},
	{"1 GiB in 1 µs", "x.log", strings.Replace(strings.Replace(goodLog, "8192", "1073741824", 1), `"coll_exec_time_us":10`, `"coll_exec_time_us":1`, 1) + "\n", 1,
		"x.log:1: all_reduce of 1 GiB in 1.00 µs claims 1073742 GB/s, more than any GPU moves (100000 GB/s): its exec time is taken as unknown"},
	{"last line cut, newline after", "x.log", goodLog + "\n" + goodLog2[:len(goodLog2)/2] + "\n", 1,
		"x.log:2: the last line is cut"},
	{"cut inside the first line", "x.log", goodLog[:len(goodLog)/2], -1, "x.log:1: the file is cut inside its first line"},
	{"bad line between records", "x.log", goodLog + "\n{oops\n" + goodLog2 + "\n", 2,
		fmt.Sprintf("x.log:2 (byte %d): not an NCCL Inspector record: invalid character 'o' looking for beginning of object key string: line left out", len(goodLog)+2)}, // the bad byte, the line's second
	{"garbage last line", "x.log", goodLog + "\ngarbage\n", 1, "x.log: a damaged line (not an NCCL Inspector record) left out; 1 record read"},
	{"many bad lines", "x.log", goodLog + "\n" + strings.Repeat("@@\n", 7) + goodLog2 + "\n", 2, "x.log: 7 damaged lines (not NCCL Inspector records) left out; 2 records read"},
	{"valid JSON, no record, between records", "x.log", goodLog + "\n" + `{"header":{"id":"0x1","rank":0,"n_ranks":2,"nnodes":1},"metadata":{"inspector_output_format_version":"v4.0","dump_timestamp_us":1752867229000000,"hostname":"h","pid":1}}` + "\n" + goodLog2 + "\n", 2,
		fmt.Sprintf("x.log:2 (byte %d): valid JSON but no NCCL Inspector record (neither coll_perf nor p2p_perf nor dump_stats nor proxy_trace): line left out", len(goodLog)+1)},
	{"empty object after records, counted", "x.log", goodLog + "\n{}\n[1]\n" + goodLog2 + "\n", 2, "x.log: 2 damaged lines (not NCCL Inspector records) left out; 2 records read"},
	{"valid JSON, no record, in a v4.3 dump", "x.log", markerLog + "\n" + `{"coll_perf":{"coll":"AllReduce","coll_sn":2,"coll_msg_size_bytes":8192,"coll_exec_time_us":10}}` + "\n{\"x\":1}\n" +
		`{"coll_perf":{"coll":"AllReduce","coll_sn":3,"coll_msg_size_bytes":8192,"coll_exec_time_us":10}}` + "\n", 2, "x.log:3 (byte "},
	{"valid JSON, no record, first", "x.log", "{}\n" + goodLog + "\n", -1, "x.log:1: valid JSON but no NCCL Inspector record"},
	{"JSON array after records", "x.log", goodLog + "\n[1]\n", 1, "x.log:2 (byte " + fmt.Sprint(len(goodLog)+1) + "): valid JSON but no NCCL Inspector record (neither coll_perf nor p2p_perf nor dump_stats nor proxy_trace) (a JSON array): line left out"},
	{"bad line in a v4.3 dump", "x.log", markerLog + "\n" + `{"coll_perf":{"coll":"AllReduce","coll_sn":2,"coll_msg_size_bytes":8192,"coll_exec_time_us":10}}` + "\n#\n" + markerLog + "\n", 1,
		"x.log:3 (byte "},
	{"prom: NaN exec time", "x.prom", promNaN(`} 9498.47`), 1, "x.prom:6: exec time NaN µs is not a time: the series is left out"},
	{"prom: NaN busbw", "x.prom", promNaN(`} 678.263`), 2, "x.prom:3: busbw NaN is not a rate: left out"},
}

const (
	markerLog = `{"header":{"id":"0x1","rank":0,"n_ranks":2,"nnodes":1},"metadata":{"inspector_output_format_version":"v4.3","dump_timestamp_us":1752867229000000,"hostname":"h","pid":1},"dump_stats":{"coll_records":2,"p2p_records":0}}`
	goodLog   = `{"header":{"id":"0x1","rank":0,"n_ranks":2,"nnodes":1},"metadata":{"inspector_output_format_version":"v4.0","dump_timestamp_us":1752867229000000,"hostname":"h","pid":1},"coll_perf":{"coll":"AllReduce","coll_sn":1,"coll_msg_size_bytes":8192,"coll_exec_time_us":10}}`
	goodLog2  = `{"header":{"id":"0x1","rank":0,"n_ranks":2,"nnodes":1},"metadata":{"inspector_output_format_version":"v4.0","dump_timestamp_us":1752867229000000,"hostname":"h","pid":1},"coll_perf":{"coll":"AllReduce","coll_sn":2,"coll_msg_size_bytes":8192,"coll_exec_time_us":10}}`
)

func promNaN(value string) string {
	b, err := os.ReadFile("testdata/prom/nccl_inspector_metrics_GPU-0.prom")
	if err != nil {
		panic(err)
	}
	return strings.Replace(string(b), value, "} NaN", 1)
}

// TestDamagedRecords: one bad value or a cut end does not abort an import: the record (or the
// value) is left out with a warning naming the file and line, and a rate no GPU reaches is not
// kept as a measured time. A file with nothing but a cut first line says so.
func TestDamagedRecords(t *testing.T) {
	for _, c := range damaged {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), c.file)
			if err := os.WriteFile(p, []byte(c.body), 0o644); err != nil {
				t.Fatal(err)
			}
			im, err := ReadFiles([]string{p}, Options{})
			if c.events < 0 {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("ReadFiles = %v; want an error containing %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(im.Events) != c.events || !strings.Contains(strings.Join(im.Warnings, "\n"), c.want) {
				t.Errorf("%d events, warnings %q; want %d and one containing %q", len(im.Events), im.Warnings, c.events, c.want)
			}
			for _, e := range im.Events {
				if e.Bytes > 0 && e.Dur() > 0 && float64(e.Bytes)*1e9/float64(e.Dur()) > maxRateBps {
					t.Errorf("event of %d B in %d ns kept: a rate no GPU reaches", e.Bytes, e.Dur())
				}
			}
		})
	}
}

// TestMaxFileBytes refuses a log or Prometheus dump holding more bytes than --max-input-bytes
// (a gzipped log's counted after decompression), naming the file, the bound and the flag; a file
// of exactly the bound is read.
func TestMaxFileBytes(t *testing.T) {
	log, err := os.ReadFile("testdata/v2.32/node0-pid1000.log")
	if err != nil {
		t.Fatal(err)
	}
	prom, err := os.ReadFile("testdata/prom/nccl_inspector_metrics_GPU-0.prom")
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(log)
	zw.Close()
	cases := []struct {
		name string
		body []byte
		max  int64
		want string // "" when the file is read
	}{
		{"log over", log, int64(len(log)) - 1, fmt.Sprintf("x.log: more than %d bytes in the file (--max-input-bytes)", len(log)-1)},
		{"log at", log, int64(len(log)), ""},
		{"tiny bound", log, 10, "x.log: more than 10 bytes in the file (--max-input-bytes)"},
		{"gzipped over", gz.Bytes(), int64(len(log)) - 1, fmt.Sprintf("x.log: more than %d bytes in the file after decompression (--max-input-bytes)", len(log)-1)},
		{"gzipped at", gz.Bytes(), int64(len(log)), ""},
		{"prom over", prom, int64(len(prom)) - 1, fmt.Sprintf("x.log: more than %d bytes in the file (--max-input-bytes)", len(prom)-1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "x.log")
			if err := os.WriteFile(p, c.body, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadFiles([]string{p}, Options{MaxFileBytes: c.max})
			if c.want == "" {
				if err != nil {
					t.Fatalf("ReadFiles = %v; want the file read", err)
				}
				return
			}
			var le *LimitError
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &le) {
				t.Fatalf("ReadFiles = %v; want a LimitError containing %q", err, c.want)
			}
		})
	}
}
