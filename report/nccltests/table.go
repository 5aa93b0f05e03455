package nccltests

import (
	"fmt"
	"io"
	"strings"

	"github.com/xfertop/xfertop/timeline"
)

// Measure is one half of a row: the out-of-place or the in-place test.
type Measure struct {
	TimeUs float64 // mean time per iteration, µs
	AlgBW  float64 // GB/s
	BusBW  float64 // GB/s
	Wrong  string  // wrong values: a count, or N/A when nothing was checked
}

// Row is one size of a sweep.
type Row struct {
	Line    int // the row's line in the log it was read from (0: built)
	Size    int64
	Count   int64
	Type    string
	Redop   string
	Root    int
	Out, In Measure
	HasIn   bool // the row has in-place columns
	// AlgoProto is the algorithm and protocol a simulated row ran with ("Ring_LL"); a log does not
	// say, and Write does not print it in the row (the columns stay nccl-tests').
	AlgoProto string
}

// Table is an nccl-tests sweep.
type Table struct {
	Op       timeline.CollOp // 0 when the log does not tell (see InferOp)
	Ranks    int             // ranks of the communicator, 0 when unknown
	NThread  int
	NGpus    int
	MinBytes int64
	MaxBytes int64
	Factor   int64 // size step as a factor, 0 when unknown or not a factor
	Iters    int
	Warmup   int
	Devices  []string // what each "Rank" line says after "on" (host, device, bus id, model), in rank order
	Rows     []Row
	AvgBusBW float64
	HasAvg   bool
	// Notes are '#' lines Write prints first: where the table came from.
	Notes []string
	// Warnings are what Parse read but would not pass in silence, each naming the file and line:
	// rows nccl-tests marked wrong, rows repeated.
	Warnings []string
	warned   int // rows warned about, listed or not
}

// Redop and root as nccl-tests prints them for op.
func opColumns(op timeline.CollOp) (redop string, root int) {
	switch op {
	case timeline.CollAllReduce, timeline.CollReduceScatter, timeline.CollSendRecv:
		return "sum", -1
	case timeline.CollReduce:
		return "sum", 0
	case timeline.CollBroadcast:
		return "none", 0
	}
	return "none", -1
}

// Binary names the nccl-tests program that measures op.
func Binary(op timeline.CollOp) string {
	switch op {
	case timeline.CollAllToAll:
		return "alltoall_perf"
	case timeline.CollSendRecv:
		return "sendrecv_perf"
	}
	return op.String() + "_perf"
}

// fmtTime formats a time in µs as nccl-tests does: fewer decimals as it grows.
func fmtTime(us float64) string {
	switch {
	case us >= 10000:
		return fmt.Sprintf("%7.0f", us)
	case us >= 100:
		return fmt.Sprintf("%7.1f", us)
	}
	return fmt.Sprintf("%7.2f", us)
}

const (
	colGroups = "#                                                              out-of-place                       in-place          "
	colNames  = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong"
	colUnits  = "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       "
)

// field is s as one column of a row: N/A when empty.
func field(s string) string {
	if s == "" {
		return "N/A"
	}
	return s
}

// Write prints t in nccl-tests' format: its header, the column names, a row per size with the
// widths nccl-tests uses, and the average bus bandwidth.
func Write(w io.Writer, t *Table) error {
	var b strings.Builder
	for _, n := range t.Notes {
		fmt.Fprintf(&b, "# %s\n", n)
	}
	fmt.Fprintf(&b, "# nThread %d nGpus %d minBytes %d maxBytes %d step: %d(factor) warmup iters: %d iters: %d agg iters: 1 validation: 0 graph: 0\n",
		max(t.NThread, 1), t.NGpus, t.MinBytes, t.MaxBytes, t.Factor, t.Warmup, t.Iters)
	b.WriteString("#\n# Using devices\n")
	for i, d := range t.Devices {
		fmt.Fprintf(&b, "#  Rank %2d Group  0 Pid %6d on %s\n", i, 0, d)
	}
	inPlace := false
	for _, r := range t.Rows {
		inPlace = inPlace || r.HasIn
	}
	if inPlace {
		b.WriteString("#\n" + colGroups + "\n" + colNames + "\n" + colUnits + "\n")
	} else {
		b.WriteString("#\n" + colGroups[:76] + "\n" + colNames[:84] + "\n" + colUnits[:77] + "\n")
	}
	for _, r := range t.Rows {
		fmt.Fprintf(&b, "%12d  %12d  %8s  %6s  %6d", r.Size, r.Count, field(r.Type), field(r.Redop), r.Root)
		ms := []Measure{r.Out}
		if inPlace {
			ms = append(ms, r.In)
		}
		for _, m := range ms {
			fmt.Fprintf(&b, "  %7s  %6.2f  %6.2f  %5s", fmtTime(m.TimeUs), m.AlgBW, m.BusBW, field(m.Wrong))
		}
		b.WriteByte('\n')
	}
	b.WriteString("# Out of bounds values : 0 OK\n")
	if t.HasAvg {
		fmt.Fprintf(&b, "# Avg bus bandwidth    : %.6g \n", t.AvgBusBW)
	}
	b.WriteString("#\n")
	_, err := io.WriteString(w, b.String())
	return err
}
