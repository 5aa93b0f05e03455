package nccltests

import (
	"bytes"
	"errors"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

func parseFile(t *testing.T, name string) *Table {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tab, err := Parse(f, name)
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return tab
}

// TestParseLogs reads the published logs in testdata: their parameters, ranks, rows and average.
func TestParseLogs(t *testing.T) {
	tests := []struct {
		file          string
		ranks, rows   int
		iters, warmup int
		first, last   Row
		avg           float64
		op            timeline.CollOp // 0: cannot be told without the rank count
	}{
		{"h100x8x2_all_reduce.log", 16, 31, 20, 5,
			Row{Size: 8, Count: 2, Type: "float", Redop: "sum", Root: -1, Out: Measure{135.8, 0, 0, "0"}, In: Measure{123.5, 0, 0, "0"}, HasIn: true},
			Row{Size: 8 << 30, Count: 2 << 30, Type: "float", Redop: "sum", Root: -1, Out: Measure{47535, 180.71, 338.82, "0"}, In: Measure{47743, 179.92, 337.35, "0"}, HasIn: true},
			70.742, timeline.CollAllReduce},
		{"h100x16_ib400_all_reduce.log", 0, 5, 0, 0,
			Row{Size: 512 << 20, Count: 128 << 20, Type: "float", Redop: "sum", Root: -1, Out: Measure{2622.9, 204.69, 383.79, "0"}, In: Measure{2622.4, 204.72, 383.86, "0"}, HasIn: true},
			Row{Size: 8 << 30, Count: 2 << 30, Type: "float", Redop: "sum", Root: -1, Out: Measure{41145, 208.77, 391.45, "0"}, In: Measure{41008, 209.47, 392.76, "0"}, HasIn: true},
			388.893, 0},
		{"a100x8_sendrecv.log", 0, 4, 0, 0,
			Row{Size: 128 << 20, Count: 32 << 20, Type: "float", Redop: "sum", Root: -1, Out: Measure{1211.2, 110.81, 110.81, "0"}, In: Measure{1211.8, 110.76, 110.76, "N/A"}, HasIn: true},
			Row{Size: 1 << 30, Count: 256 << 20, Type: "float", Redop: "sum", Root: -1, Out: Measure{5503.4, 195.10, 195.10, "0"}, In: Measure{5490.5, 195.56, 195.56, "N/A"}, HasIn: true},
			0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			tab := parseFile(t, tc.file)
			if tab.Ranks != tc.ranks || len(tab.Rows) != tc.rows || tab.Iters != tc.iters || tab.Warmup != tc.warmup {
				t.Errorf("ranks %d rows %d iters %d warmup %d; want %d %d %d %d", tab.Ranks, len(tab.Rows), tab.Iters, tab.Warmup, tc.ranks, tc.rows, tc.iters, tc.warmup)
			}
			first, last := tab.Rows[0], tab.Rows[len(tab.Rows)-1]
			first.Line, last.Line = 0, 0
			if first != tc.first || last != tc.last {
				t.Errorf("rows %+v … %+v; want %+v … %+v", first, last, tc.first, tc.last)
			}
			if tab.HasAvg != (tc.avg > 0) || tab.AvgBusBW != tc.avg {
				t.Errorf("avg %v (%v); want %v", tab.AvgBusBW, tab.HasAvg, tc.avg)
			}
			op, err := InferOp(tab)
			if op != tc.op || (tc.op == 0) != (err != nil) {
				t.Errorf("InferOp = %v, %v; want %v", op, err, tc.op)
			}
		})
	}
}

// TestRankCount: the ranks are the header's nThread × nGpus where its rank lines list fewer (cut
// or filtered), and the rank lines' count where there are more (MPI: the header is one process's).
func TestRankCount(t *testing.T) {
	b, err := os.ReadFile("testdata/h100x8x2_all_reduce.log")
	if err != nil {
		t.Fatal(err)
	}
	var few []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "#  Rank ") || strings.HasPrefix(l, "#  Rank  0 ") || strings.HasPrefix(l, "#  Rank  1 ") {
			few = append(few, l)
		}
	}
	for _, c := range []struct {
		name, log string
		want      int
	}{
		{"MPI: 16 rank lines, nGpus 1", string(b), 16},
		{"2 of 8 rank lines, nGpus 8", strings.Replace(strings.Join(few, "\n"), "nGpus 1 ", "nGpus 8 ", 1), 8},
		{"2 rank lines, nGpus 1", strings.Join(few, "\n"), 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			tab, err := Parse(strings.NewReader(c.log), "x.log")
			if err != nil {
				t.Fatal(err)
			}
			if tab.Ranks != c.want {
				t.Errorf("Ranks = %d; want %d", tab.Ranks, c.want)
			}
		})
	}
}

// TestParseNoise: MPI's tag prefixes, NCCL's INFO lines and banners between the table's lines
// change nothing.
func TestParseNoise(t *testing.T) {
	clean, err := os.ReadFile("testdata/h100x8x2_all_reduce.log")
	if err != nil {
		t.Fatal(err)
	}
	var noisy strings.Builder
	for i, l := range strings.Split(strings.TrimSuffix(string(clean), "\n"), "\n") {
		if i%5 == 0 {
			noisy.WriteString("[1,0]<stdout>:ztan-mig-235z:6899:6899 [0] NCCL INFO Channel 00/32 : 0 1 2 3 4 5 6 7\n")
			noisy.WriteString("NCCL version 2.21.5+cuda12.4\n\n")
		}
		noisy.WriteString("[1,0]<stdout>:" + l + "\n")
	}
	a := parseFile(t, "h100x8x2_all_reduce.log")
	b, err := Parse(strings.NewReader(noisy.String()), "noisy.log")
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Rows) != len(b.Rows) || a.Ranks != b.Ranks || a.AvgBusBW != b.AvgBusBW {
		t.Fatalf("noisy log: %d rows, %d ranks, avg %v; clean: %d, %d, %v", len(b.Rows), b.Ranks, b.AvgBusBW, len(a.Rows), a.Ranks, a.AvgBusBW)
	}
	for i := range a.Rows {
		x, y := a.Rows[i], b.Rows[i]
		x.Line, y.Line = 0, 0
		if x != y {
			t.Errorf("row %d: %+v; clean %+v", i, y, x)
		}
	}
}

const header = "# nThread 1 nGpus 8 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n" +
	"#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"

// TestParseErrors: malformed logs are errors naming the line and column of what is wrong.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"row before header", "# nThread 1 nGpus 8\n           8             2     float     sum      -1    15.00    0.00    0.00    N/A\n",
			"x.log:2:12: data row before the column header"},
		{"too few fields", header + "           8             2     float     sum      -1    15.00    0.00    0.00\n",
			"x.log:3:78: 8 fields; the column header has 13"},
		{"too many fields", header + "8 2 float sum -1 1 0 0 0 1 0 0 0 extra\n", "x.log:3:34: 14 fields; the column header has 13"},
		{"bad time", header + "           8             2     float     sum      -1    fast    0.00    0.00      0   1   0   0   0\n",
			`x.log:3:57: time "fast" is not a number of 0 or more`},
		{"negative size", header + "  -8 2 float sum -1 1 0 0 0 1 0 0 0\n", `x.log:3:3: size "-8" is not a count of 0 or more`},
		{"time 1e308", header + "8 2 float sum -1 1e308 0 0 0 1 0 0 0\n", `x.log:3:18: time "1e308" is out of range (more than 1e+12 µs)`},
		{"time 1e400", header + "8 2 float sum -1 1 0 0 0 1e400 0 0 0\n", `x.log:3:26: time "1e400" is out of range`},
		{"busbw 1e9", header + "8 2 float sum -1 1 0 1e9 0 1 0 0 0\n", `x.log:3:22: busbw "1e9" is out of range (more than 1e+06 GB/s)`},
		{"bad #wrong", header + "8 2 float sum -1 1 0 0 x 1 0 0 0\n", `x.log:3:24: #wrong "x" is not a count of 0 or more, or N/A`},
		{"a dash line is noise", header + "- 8 2 float\n", ""},
		{"bad size", header + "8x 2 float sum -1 1 0 0 0 1 0 0 0\n", `x.log:3:1: size "8x" is not a count of 0 or more`},
		{"bad root", header + "8 2 float sum -7 1 0 0 0 1 0 0 0\n", `x.log:3:15: root "-7" is not a rank or -1`},
		{"NaN busbw", header + "8 2 float sum -1 1 0 NaN 0 1 0 0 0\n", `x.log:3:22: busbw "NaN" is not a number of 0 or more`},
		{"unknown column", "#  size  count  type  redop  speed\n", `x.log:1:30: unknown column "speed"`},
		{"header lacks busbw", "#  size  count  type  redop  root  time  algbw\n", "x.log:1:1: column header lacks busbw"},
		{"bad average", header + "8 2 float sum -1 1 0 0 0 1 0 0 0\n# Avg bus bandwidth    : lots\n", `x.log:4:26: average bus bandwidth "lots" is not a number of GB/s`},
		{"no rows", header, "x.log: no nccl-tests data rows"},
		{"long line", header + strings.Repeat("x", MaxLineBytes+1) + "\n", "x.log:3:1: line longer than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.in), "x.log")
			if tc.want == "" {
				if !errors.Is(err, ErrNoRows) {
					t.Errorf("Parse = %v; want ErrNoRows", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("Parse = %v; want %q", err, tc.want)
			}
		})
	}
}

// TestParseWarnings: rows nccl-tests marked wrong and rows repeated are read, and warned about
// naming the file and line; a clean log has no warnings.
func TestParseWarnings(t *testing.T) {
	clean, err := os.ReadFile("testdata/h100x8x2_all_reduce.log")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(clean), "\n")
	edit := func(f func(l []string) []string) string {
		return strings.Join(f(slices.Clone(lines)), "")
	}
	tests := []struct {
		name, in string
		rows     int
		want     []string
	}{
		{"clean", string(clean), 31, nil},
		{"wrong out-of-place", edit(func(l []string) []string {
			l[23] = strings.Replace(l[23], " 0    123.5", " 17    123.5", 1)
			return l
		}), 31, []string{"x.log:24: nccl-tests found 17 wrong results at 8 B (out-of-place): the row's figures are no timing reference"}},
		{"wrong both", edit(func(l []string) []string {
			l[24] = strings.Replace(strings.Replace(l[24], "      0\n", "      3\n", 1), " 0    122.3", " 2    122.3", 1)
			return l
		}), 31, []string{"x.log:25: nccl-tests found 2 wrong results at 16 B (out-of-place)", "x.log:25: nccl-tests found 3 wrong results at 16 B (in-place)"}},
		{"repeated row", edit(func(l []string) []string {
			return slices.Insert(l, 25, l[24])
		}), 32, []string{"x.log:26: repeats the row of line 25 (16 B, float, sum, root -1)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tab, err := Parse(strings.NewReader(tc.in), "x.log")
			if err != nil {
				t.Fatal(err)
			}
			if len(tab.Rows) != tc.rows || len(tab.Warnings) != len(tc.want) {
				t.Fatalf("%d rows, warnings %q; want %d rows and %d warnings", len(tab.Rows), tab.Warnings, tc.rows, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(tab.Warnings[i], w) {
					t.Errorf("warning %d = %q; want %q", i, tab.Warnings[i], w)
				}
			}
		})
	}
}

// table builds a table of op over n ranks with nccl-tests' counts and bus factor.
func table(op timeline.CollOp, n int) *Table {
	redop, root := opColumns(op)
	t := &Table{Op: op, Ranks: n, NThread: 1, NGpus: n, MinBytes: 1 << 20, MaxBytes: 1 << 30, Factor: 2, Iters: 20}
	for s := int64(1 << 20); s <= 1<<30; s *= 4 {
		alg := float64(s) / 1e3 / (10 + float64(s)/200e3)
		m := Measure{TimeUs: 10 + float64(s)/200e3, AlgBW: math.Round(alg*100) / 100, Wrong: "N/A"}
		m.BusBW = math.Round(alg*op.BusFactor(n)*100) / 100
		t.Rows = append(t.Rows, Row{Size: s, Count: countOf(op, s, n), Type: "float", Redop: redop, Root: root, Out: m, In: m, HasIn: true})
	}
	for _, r := range t.Rows {
		t.AvgBusBW += r.Out.BusBW / float64(len(t.Rows))
	}
	t.HasAvg = true
	for i := range n {
		t.Devices = append(t.Devices, "host device "+string(rune('0'+i%10)))
	}
	return t
}

// TestWriteParseRoundTrip: what Write prints, Parse reads back; and InferOp tells each operation
// from its rows where nccl-tests' columns can (all-gather and all-to-all cannot be told apart).
func TestWriteParseRoundTrip(t *testing.T) {
	for _, op := range Ops {
		for _, n := range []int{2, 8, 16} {
			want := table(op, n)
			var b bytes.Buffer
			if err := Write(&b, want); err != nil {
				t.Fatal(err)
			}
			got, err := Parse(&b, "rt.log")
			if err != nil {
				t.Fatalf("%v/%d: %v\n%s", op, n, err, b.String())
			}
			if got.Ranks != n || len(got.Rows) != len(want.Rows) || got.Iters != 20 || got.Factor != 2 || got.MaxBytes != 1<<30 {
				t.Errorf("%v/%d: ranks %d rows %d iters %d factor %d max %d", op, n, got.Ranks, len(got.Rows), got.Iters, got.Factor, got.MaxBytes)
			}
			for i := range got.Rows {
				g, w := got.Rows[i], want.Rows[i]
				g.Line = 0
				w.Out.TimeUs, w.In.TimeUs = roundTime(w.Out.TimeUs), roundTime(w.In.TimeUs)
				if g != w {
					t.Errorf("%v/%d row %d: %+v; want %+v", op, n, i, g, w)
				}
			}
			inferred, err := InferOp(got)
			ambiguous := op == timeline.CollAllGather || op == timeline.CollAllToAll ||
				(n == 2 && (op == timeline.CollAllReduce || op == timeline.CollSendRecv))
			switch {
			case ambiguous && err == nil:
				t.Errorf("%v/%d: InferOp = %v; want an error naming the candidates", op, n, inferred)
			case !ambiguous && (err != nil || inferred != op):
				t.Errorf("%v/%d: InferOp = %v, %v", op, n, inferred, err)
			}
		}
	}
}

// roundTime is a time as nccl-tests prints it.
func roundTime(us float64) float64 {
	switch {
	case us >= 10000:
		return math.Round(us)
	case us >= 100:
		return math.Round(us*10) / 10
	}
	return math.Round(us*100) / 100
}

func TestDetect(t *testing.T) {
	for _, f := range []string{"h100x8x2_all_reduce.log", "h100x16_ib400_all_reduce.log", "a100x8_sendrecv.log"} {
		b, err := os.ReadFile("testdata/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if !Detect(b[:min(len(b), 512)]) {
			t.Errorf("Detect(%s) = false", f)
		}
	}
	for _, s := range []string{`{"traceEvents": []}`, "xfr\x00", "# a markdown title\nsome text\n"} {
		if Detect([]byte(s)) {
			t.Errorf("Detect(%q) = true", s)
		}
	}
}

// FuzzParse: any input parses or fails with an error, never a panic; what parses has rows, and
// writes and parses back to the same sizes.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"h100x8x2_all_reduce.log", "h100x16_ib400_all_reduce.log", "a100x8_sendrecv.log"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(header + "8 2 float sum -1 1 0 0 0 1 0 0 0\n# Avg bus bandwidth : 1\n"))
	f.Add([]byte("#size count type redop time algbw busbw\n1 1 x y N/A N/A N/A\n"))
	f.Add([]byte(header + "8 2 float sum -1 1 0 0 17 1 0 0 0\n8 2 float sum -1 1 0 0 0 1 0 0 0\n-8 2 float sum -1 1e308 0 0 0 1 0 0 0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, err := Parse(bytes.NewReader(data), "fuzz.log")
		if err != nil {
			return
		}
		if len(tab.Rows) == 0 {
			t.Fatal("no rows and no error")
		}
		_, _ = InferOp(tab)
		var b bytes.Buffer
		if err := Write(&b, tab); err != nil {
			t.Fatal(err)
		}
		back, err := Parse(&b, "back.log")
		if err != nil {
			t.Fatalf("written table does not parse: %v\n%s", err, b.String())
		}
		if len(back.Rows) != len(tab.Rows) {
			t.Fatalf("%d rows back; wrote %d", len(back.Rows), len(tab.Rows))
		}
		for i := range back.Rows {
			if back.Rows[i].Size != tab.Rows[i].Size {
				t.Fatalf("row %d size %d back; wrote %d", i, back.Rows[i].Size, tab.Rows[i].Size)
			}
		}
	})
}
