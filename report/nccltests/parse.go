package nccltests

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Limits on what Parse reads, so that a file that is not a log costs little.
const (
	MaxLineBytes = 64 << 10 // a line longer than this is an error
	MaxRows      = 100_000  // as many rows as this is an error
)

// SyntaxError is a malformed log: the file, the line and the column (1-based, in bytes) where
// what is wrong begins.
type SyntaxError struct {
	File      string
	Line, Col int
	Msg       string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// ErrNoRows is the error for a log in which no data row was found.
var ErrNoRows = errors.New("no nccl-tests data rows (lines of size, count, type, redop, root, time, algbw, busbw)")

// mpiPrefix is what Open MPI's --tag-output puts before each line: "[1,0]<stdout>:".
var mpiPrefix = regexp.MustCompile(`^\[\d+,\d+\]<std(?:out|err)>:`)

// Detect reports whether head, a file's first bytes, is the start of an nccl-tests log: its
// "# nThread … nGpus" line, or its column header.
func Detect(head []byte) bool {
	if i := bytes.Index(head, []byte("# nThread ")); i >= 0 && bytes.Contains(head[i:], []byte("nGpus")) {
		return true
	}
	return bytes.Contains(head, []byte("algbw")) && bytes.Contains(head, []byte("busbw")) && bytes.Contains(head, []byte("#"))
}

// column is one field of a data row as the header names it.
type column int

const (
	colSize column = iota
	colCount
	colType
	colRedop
	colRoot
	colTime
	colAlgBW
	colBusBW
	colWrong
)

var colByName = map[string]column{"size": colSize, "count": colCount, "type": colType, "redop": colRedop, "root": colRoot,
	"time": colTime, "algbw": colAlgBW, "busbw": colBusBW, "#wrong": colWrong}

// parser holds what the lines read so far said.
type parser struct {
	name  string
	t     *Table
	cols  []column // the data columns, from the header line
	ranks map[int]bool
	seen  map[rowKey]int // each row's size, type, redop and root → the line it was first on
}

// rowKey is what tells one row of a sweep from another.
type rowKey struct {
	size, count int64
	typ, redop  string
	root        int
}

// Bounds on a row's figures: a time past a million seconds (11.6 days) per iteration, or a rate past
// 10^6 GB/s (a PB/s), is no measurement but a damaged or hand-edited line ("1e308").
const (
	maxTimeUs = 1e12
	maxGBps   = 1e6
	// maxWarnings bounds the rows warned about one by one; the rest are counted.
	maxWarnings = 20
)

// warn adds a warning about line n, within maxWarnings.
func (p *parser) warn(n int, format string, a ...any) {
	p.t.warned++
	if p.t.warned <= maxWarnings {
		p.t.Warnings = append(p.t.Warnings, fmt.Sprintf("%s:%d: %s", p.name, n, fmt.Sprintf(format, a...)))
	}
}

// Parse reads an nccl-tests log. Lines other than the header ('#'), the data rows and the average
// are skipped (NCCL's own output, banners); a data row (a line starting with a number after the
// column header) that does not fit the header is a *SyntaxError naming its line and column.
func Parse(r io.Reader, name string) (*Table, error) {
	p := &parser{name: name, t: &Table{}, ranks: map[int]bool{}, seen: map[rowKey]int{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), MaxLineBytes)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		off := 0
		if m := mpiPrefix.FindStringIndex(text); m != nil {
			off = m[1]
		}
		if err := p.line(line, off, text); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &SyntaxError{File: name, Line: line + 1, Col: 1, Msg: fmt.Sprintf("line longer than %d bytes: not an nccl-tests log", MaxLineBytes)}
		}
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(p.t.Rows) == 0 {
		return nil, fmt.Errorf("%s: %w", name, ErrNoRows)
	}
	if n := p.t.warned - maxWarnings; n > 0 {
		p.t.Warnings = append(p.t.Warnings, fmt.Sprintf("%s: %d more rows warned about (not listed)", name, n))
	}
	// The header's nThread × nGpus are one process's ranks (under MPI every process runs that
	// many; rank 0 prints every rank's "# Rank" line); a log whose rank lines were cut or
	// filtered lists fewer. The ranks are the more of the two.
	p.t.Ranks = len(p.ranks)
	if p.t.NGpus > 0 {
		p.t.Ranks = max(p.t.Ranks, max(p.t.NThread, 1)*p.t.NGpus)
	}
	return p.t, nil
}

// fields splits s into its whitespace-separated fields with their 1-based columns.
func fields(s string, off int) (fs []string, cols []int) {
	i := off
	for i < len(s) {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r') {
			i++
		}
		j := i
		for j < len(s) && s[j] != ' ' && s[j] != '\t' && s[j] != '\r' {
			j++
		}
		if j > i {
			fs = append(fs, s[i:j])
			cols = append(cols, i+1)
		}
		i = j
	}
	return fs, cols
}

func (p *parser) line(n, off int, text string) error {
	fs, cols := fields(text, off)
	if len(fs) == 0 {
		return nil
	}
	if strings.HasPrefix(fs[0], "#") {
		return p.comment(n, text[cols[0]-1:], fs, cols)
	}
	if !numeric(fs[0]) {
		return nil // NCCL's INFO lines, version banners: not the table's
	}
	if p.cols == nil {
		return &SyntaxError{File: p.name, Line: n, Col: cols[0], Msg: "data row before the column header (#  size  count  type ...)"}
	}
	if len(p.t.Rows) >= MaxRows {
		return &SyntaxError{File: p.name, Line: n, Col: cols[0], Msg: fmt.Sprintf("more than %d rows", MaxRows)}
	}
	return p.row(n, fs, cols)
}

// numeric reports whether a line's first field begins as a number does (a digit, or a minus
// sign before one: "-8" is a row with a bad size, not noise to skip).
func numeric(f string) bool {
	digit := func(c byte) bool { return c >= '0' && c <= '9' }
	return digit(f[0]) || (len(f) > 1 && f[0] == '-' && (digit(f[1]) || f[1] == '.'))
}

// comment reads a '#' line: the run's parameters, a rank, the column header, the average.
func (p *parser) comment(n int, text string, fs []string, cols []int) error {
	body := strings.TrimSpace(strings.TrimPrefix(text, "#"))
	switch {
	case strings.HasPrefix(body, "nThread "):
		p.params(fs[1:])
	case strings.HasPrefix(body, "Rank "):
		if len(fs) > 2 {
			if r, err := strconv.Atoi(fs[2]); err == nil && r >= 0 && r < 1<<20 {
				p.ranks[r] = true
				if i := strings.Index(body, " on "); i >= 0 {
					p.t.Devices = append(p.t.Devices, strings.TrimSpace(body[i+4:]))
				}
			}
		}
	case strings.HasPrefix(body, "Avg bus bandwidth"):
		_, v, ok := strings.Cut(body, ":")
		vs := strings.Fields(v)
		if !ok || len(vs) == 0 {
			return &SyntaxError{File: p.name, Line: n, Col: cols[0], Msg: "average bus bandwidth without a value"}
		}
		f, err := strconv.ParseFloat(vs[0], 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			return &SyntaxError{File: p.name, Line: n, Col: cols[0] + strings.Index(text, vs[0]), Msg: fmt.Sprintf("average bus bandwidth %q is not a number of GB/s", vs[0])}
		}
		p.t.AvgBusBW, p.t.HasAvg = f, true
	default:
		return p.header(n, fs, cols)
	}
	return nil
}

// params reads "nThread 1 nGpus 8 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5
// iters: 20 ...": unknown or malformed values are left at zero (they only describe the run).
func (p *parser) params(fs []string) {
	for i := 0; i+1 < len(fs); i++ {
		k, v := strings.TrimSuffix(fs[i], ":"), fs[i+1]
		num, _ := strconv.ParseInt(strings.TrimSuffix(v, "(factor)"), 10, 64)
		if num < 0 {
			num = 0
		}
		switch {
		case k == "nThread":
			p.t.NThread = int(min(num, 1<<20))
		case k == "nGpus":
			p.t.NGpus = int(min(num, 1<<20))
		case k == "minBytes":
			p.t.MinBytes = num
		case k == "maxBytes":
			p.t.MaxBytes = num
		case k == "step" && strings.HasSuffix(v, "(factor)"):
			p.t.Factor = num
		case k == "iters" && i > 0 && fs[i-1] == "warmup":
			p.t.Warmup = int(min(num, 1<<30))
		case k == "iters" && (i == 0 || fs[i-1] != "agg"):
			p.t.Iters = int(min(num, 1<<30))
		}
	}
}

// header reads the column names line ("#  size  count  type  redop  root  time  algbw  busbw
// #wrong  time ..."), if this is it.
func (p *parser) header(n int, fs []string, cols []int) error {
	names := fs[1:]
	if fs[0] != "#" {
		names = append([]string{strings.TrimPrefix(fs[0], "#")}, fs[1:]...)
	}
	if len(names) == 0 || names[0] != "size" {
		return nil
	}
	var cs []column
	for i, name := range names {
		c, ok := colByName[name]
		if !ok {
			return &SyntaxError{File: p.name, Line: n, Col: cols[len(cols)-len(names)+i], Msg: fmt.Sprintf("unknown column %q", name)}
		}
		cs = append(cs, c)
	}
	need := []column{colSize, colCount, colType, colRedop, colTime, colAlgBW, colBusBW}
	for _, c := range need {
		if !hasCol(cs, c) {
			return &SyntaxError{File: p.name, Line: n, Col: cols[0], Msg: "column header lacks " + colName(c)}
		}
	}
	p.cols = cs
	return nil
}

func hasCol(cs []column, c column) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}

func colName(c column) string {
	for k, v := range colByName {
		if v == c {
			return k
		}
	}
	return "?"
}

// row reads a data row against the header's columns.
func (p *parser) row(n int, fs []string, cols []int) error {
	if len(fs) != len(p.cols) {
		col := cols[len(cols)-1] + len(fs[len(fs)-1]) // where the missing field would begin
		if len(fs) > len(p.cols) {
			col = cols[len(p.cols)] // the first field too many
		}
		return &SyntaxError{File: p.name, Line: n, Col: col, Msg: fmt.Sprintf("%d fields; the column header has %d", len(fs), len(p.cols))}
	}
	r := Row{Line: n, Root: -1}
	times := 0
	m := &r.Out
	for i, c := range p.cols {
		v, at := fs[i], cols[i]
		bad := func(what string) error {
			return &SyntaxError{File: p.name, Line: n, Col: at, Msg: fmt.Sprintf("%s %q is not %s", colName(c), v, what)}
		}
		var err error
		switch c {
		case colSize, colCount:
			x, perr := strconv.ParseInt(v, 10, 64)
			if perr != nil || x < 0 {
				return bad("a count of 0 or more")
			}
			if c == colSize {
				r.Size = x
			} else {
				r.Count = x
			}
		case colType:
			r.Type = v
		case colRedop:
			r.Redop = v
		case colRoot:
			x, perr := strconv.Atoi(v)
			if perr != nil || x < -1 {
				return bad("a rank or -1")
			}
			r.Root = x
		case colTime:
			times++
			if times == 2 {
				m, r.HasIn = &r.In, true
			}
			m.TimeUs, err = number(v, maxTimeUs, "µs")
		case colAlgBW:
			m.AlgBW, err = number(v, maxGBps, "GB/s")
		case colBusBW:
			m.BusBW, err = number(v, maxGBps, "GB/s")
		case colWrong:
			if x, perr := strconv.ParseInt(v, 10, 64); v != "N/A" && (perr != nil || x < 0) {
				return bad("a count of 0 or more, or N/A")
			}
			m.Wrong = v
		}
		var re *rangeError
		if errors.As(err, &re) {
			return &SyntaxError{File: p.name, Line: n, Col: at, Msg: fmt.Sprintf("%s %q is out of range (%s)", colName(c), v, re.why)}
		}
		if err != nil {
			return bad("a number of 0 or more")
		}
	}
	p.check(&r)
	p.t.Rows = append(p.t.Rows, r)
	return nil
}

// check warns about a row that nccl-tests marked wrong (its #wrong column: results that differed
// from the expected ones, so its time is no reference to compare with) or that repeats an earlier
// row's size, type, operation and root (two runs in one log, nccl-tests -N, or a line copied):
// both are listed, and the warning says which lines.
func (p *parser) check(r *Row) {
	for _, w := range []struct {
		m     *Measure
		place string
	}{{&r.Out, "out-of-place"}, {&r.In, "in-place"}} {
		if w.m.Wrong != "" && w.m.Wrong != "N/A" && w.m.Wrong != "0" {
			p.warn(r.Line, "nccl-tests found %s wrong results at %d B (%s): the row's figures are no timing reference", w.m.Wrong, r.Size, w.place)
		}
	}
	k := rowKey{r.Size, r.Count, r.Type, r.Redop, r.Root}
	if first, ok := p.seen[k]; ok {
		p.warn(r.Line, "repeats the row of line %d (%d B, %s, %s, root %d): two runs in one log, or a copied line; both are listed", first, r.Size, r.Type, r.Redop, r.Root)
		return
	}
	p.seen[k] = r.Line
}

// rangeError is a number that reads but is past what the column can hold.
type rangeError struct{ why string }

func (e *rangeError) Error() string { return e.why }

// number reads a non-negative finite decimal of at most most (unit); nccl-tests prints N/A for
// what it did not measure.
func number(s string, most float64, unit string) (float64, error) {
	if s == "N/A" {
		return 0, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if errors.Is(err, strconv.ErrRange) && f > 0 { // "1e400": a number, past any float
		return 0, &rangeError{fmt.Sprintf("more than %g %s", most, unit)}
	}
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return 0, errors.New("not a number")
	}
	if f > most {
		return 0, &rangeError{fmt.Sprintf("more than %g %s", most, unit)}
	}
	return f, nil
}
