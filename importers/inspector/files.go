package inspector

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Expand turns the paths a user gave into Inspector's files: a directory becomes the logs and
// Prometheus dumps in it (*.log, *.jsonl, *.json, *.prom, each optionally .gz), in name order. A
// directory holding none of them is an error naming it.
func Expand(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		files, err := dirFiles(p)
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("%s: no NCCL Inspector logs (*.log, *.jsonl, *.prom, plain or .gz) in the directory", p)
		}
		out = append(out, files...)
	}
	return out, nil
}

// dirFiles lists the Inspector files directly in dir, in name order.
func dirFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() || !inspectorName(e.Name()) {
			continue
		}
		out = append(out, filepath.Join(dir, e.Name()))
	}
	sort.Strings(out)
	return out, nil
}

// inspectorName reports whether a file's name is one Inspector writes (or a user compressed).
func inspectorName(name string) bool {
	n := strings.TrimSuffix(strings.ToLower(name), ".gz")
	for _, ext := range []string{".log", ".jsonl", ".json", ".prom"} {
		if strings.HasSuffix(n, ext) {
			return true
		}
	}
	return false
}

// IsDir reports whether path is a directory holding Inspector files: what a directory given to
// analyze, replay or compare is read as when it holds no recordings.
func IsDir(path string) bool {
	st, err := os.Stat(path)
	if err != nil || !st.IsDir() {
		return false
	}
	files, err := dirFiles(path)
	if err != nil || len(files) == 0 {
		return false
	}
	f, err := os.Open(files[0])
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	return Sniff(head[:n]) != NotInspector
}

// Kind is what Sniff finds at the head of a file.
type Kind uint8

// Kinds of file.
const (
	NotInspector Kind = iota
	JSONLines         // Inspector's JSON-lines log
	Prometheus        // Inspector's Prometheus textfile dump
)

// Sniff tells from a file's first bytes (gzipped or not) whether Inspector wrote it: a JSON
// object naming Inspector's format version or one of its record bodies, or Prometheus text whose
// first sample is one of Inspector's nccl_ metrics.
func Sniff(head []byte) Kind {
	if len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(head))
		if err != nil {
			return NotInspector
		}
		inner := make([]byte, 512)
		n, _ := io.ReadFull(zr, inner)
		head = inner[:n]
	}
	text := bytes.TrimLeft(head, " \t\r\n\ufeff")
	if len(text) > 0 && text[0] == '{' {
		for _, mark := range []string{`"inspector_output_format_version"`, `"coll_perf"`, `"p2p_perf"`, `"dump_stats"`} {
			if bytes.Contains(text, []byte(mark)) {
				return JSONLines
			}
		}
		return NotInspector
	}
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		switch {
		case l == "":
			continue
		case strings.HasPrefix(l, "# HELP nccl_") || strings.HasPrefix(l, "# TYPE nccl_"):
			return Prometheus
		case strings.HasPrefix(l, "#"):
			continue
		case strings.HasPrefix(l, "nccl_") && strings.Contains(l, "{"):
			return Prometheus
		}
		return NotInspector
	}
	return NotInspector
}

// openFile opens path for reading, through gzip when it is compressed. close closes both.
func openFile(path string) (r io.Reader, closeFn func() error, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	br := bufio.NewReaderSize(f, 1<<16)
	magic, _ := br.Peek(2)
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("%s: gzip: %w", path, err)
		}
		return zr, func() error { zr.Close(); return f.Close() }, nil
	}
	return br, f.Close, nil
}

// errFileTooBig is a file holding more bytes than Options.MaxFileBytes.
var errFileTooBig = errors.New("file past --max-input-bytes")

// capReader reads at most max bytes of r, and then fails with errFileTooBig if r holds more: the
// bound is on the data read (a gzipped log's decompressed bytes), not on the file's size on disk.
type capReader struct {
	r        io.Reader
	max, got int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.got > c.max {
		return 0, errFileTooBig
	}
	if left := c.max + 1 - c.got; int64(len(p)) > left {
		p = p[:left]
	}
	n, err := c.r.Read(p)
	c.got += int64(n)
	if c.got > c.max {
		return n - int(c.got-c.max), errFileTooBig
	}
	return n, err
}

// errLineTooLong is a line longer than the limit.
var errLineTooLong = errors.New("line too long")

// lineReader reads lines of at most max bytes, holding no more.
type lineReader struct {
	br   *bufio.Reader
	max  int
	buf  []byte
	n    int   // lines read
	off  int64 // bytes read before the current line
	next int64
	torn bool // the last line had no newline
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 1<<16), max: max}
}

// Next returns the next line without its newline; io.EOF at the end.
func (lr *lineReader) Next() ([]byte, error) {
	lr.buf = lr.buf[:0]
	lr.off = lr.next
	for {
		chunk, err := lr.br.ReadSlice('\n')
		lr.next += int64(len(chunk))
		if len(lr.buf)+len(chunk) > lr.max+1 {
			lr.n++
			return nil, errLineTooLong
		}
		lr.buf = append(lr.buf, chunk...)
		switch {
		case err == nil:
			lr.n++
			return bytes.TrimRight(lr.buf, "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(lr.buf) > 0:
			lr.n++
			lr.torn = true
			return lr.buf, nil
		}
		return nil, err
	}
}
