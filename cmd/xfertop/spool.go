package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/charmbracelet/x/term"
	"github.com/xfertop/xfertop/importers"
	"github.com/xfertop/xfertop/units"
)

// inputNames is what one command made of the user's inputs behind their backs: temporary files
// that stand for them (a pipe spooled to a file, a trace imported to a recording). Messages name
// the user's input, never the temporary file; the temporary directories go when the command ends,
// a signal included (xfertop removes them once the command returns, or is given up on).
type inputNames struct {
	mu       sync.Mutex
	tmp, was []string // tmp[i] stands for was[i]
	dirs     []string
}

type inputNamesKey struct{}

// withInputNames gives ctx a fresh inputNames, unless it has one.
func withInputNames(ctx context.Context) (context.Context, *inputNames) {
	if n := namesOf(ctx); n != nil {
		return ctx, n
	}
	n := &inputNames{}
	return context.WithValue(ctx, inputNamesKey{}, n), n
}

// namesOf is ctx's inputNames, or nil (whose methods do nothing).
func namesOf(ctx context.Context) *inputNames {
	if ctx == nil {
		return nil
	}
	n, _ := ctx.Value(inputNamesKey{}).(*inputNames)
	return n
}

// stand records that the temporary file tmp stands for the user's input was.
func (n *inputNames) stand(tmp, was string) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.tmp, n.was = append(n.tmp, tmp), append(n.was, was)
}

// removeLater removes dir when the command ends.
func (n *inputNames) removeLater(dir string) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.dirs = append(n.dirs, dir)
}

// say rewrites a message so that it names the user's inputs, not the files standing for them.
func (n *inputNames) say(msg string) string {
	if n == nil {
		return msg
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for i := len(n.tmp) - 1; i >= 0; i-- { // the latest first: an import of a spooled pipe names the pipe
		msg = strings.ReplaceAll(msg, n.tmp[i], n.was[i])
	}
	return msg
}

// cleanup removes the temporary directories.
func (n *inputNames) cleanup() {
	if n == nil {
		return
	}
	n.mu.Lock()
	dirs := n.dirs
	n.dirs = nil
	n.mu.Unlock()
	for _, d := range dirs {
		os.RemoveAll(d)
	}
}

// maxSpoolBytes is the most read from a pipe into its temporary file: the largest trace
// (--max-input-bytes' default) that is read at all.
var maxSpoolBytes int64 = 16 << 30

// isPipe reports whether path is standard input ("-") or a pipe (a FIFO, or a shell's process
// substitution, <(cmd)): inputs that can be read once, from the start, and not seeked.
func isPipe(path string) bool {
	if path == "-" {
		return true
	}
	st, err := os.Stat(path)
	return err == nil && st.Mode()&fs.ModeNamedPipe != 0
}

// spoolPipes copies each input that is a pipe, or standard input ("-"), to a temporary file and
// returns the paths with those files in their places. Reading an input takes more than one pass
// (its format is told from its first bytes, and some formats are read twice), which a pipe cannot
// give. Messages name the pipe, not the file (inputNames); the files go when the command ends.
func spoolPipes(ctx context.Context, paths []string) ([]string, error) {
	var out []string
	var dir string
	for i, p := range paths {
		if !isPipe(p) {
			out = append(out, p)
			continue
		}
		if out == nil {
			out = append([]string(nil), paths[:i]...)
		}
		if dir == "" {
			d, err := os.MkdirTemp("", "xfertop-pipe-")
			if err != nil {
				return nil, failure(err)
			}
			dir = d
			namesOf(ctx).removeLater(dir)
		}
		tmp, err := spool(ctx, p, filepath.Join(dir, fmt.Sprintf("%d-%s", i, pipeBase(p))))
		if err != nil {
			if dir != "" && namesOf(ctx) == nil {
				os.RemoveAll(dir)
			}
			return nil, err
		}
		out = append(out, tmp)
	}
	if out == nil {
		return paths, nil
	}
	return out, nil
}

// pipeBase is the name of a pipe's temporary file: its own base name ("stdin" for "-"), which keeps
// a suffix that tells a format (.xfr, .nsys-rep).
func pipeBase(p string) string {
	if p == "-" {
		return "stdin"
	}
	return filepath.Base(p)
}

// pipeName is how messages name a pipe: "-" is standard input.
func pipeName(p string) string {
	if p == "-" {
		return "standard input"
	}
	return p
}

// spool copies the pipe p into the new file tmp, at most maxSpoolBytes (less when the temporary
// directory has less than twice that free). Its first bytes are looked at before anything is
// written: what is no format xfertop reads (zeros, random bytes) is refused at once, without
// filling a disk with it. Standard input that is a regular file (< FILE) is read in place.
func spool(ctx context.Context, p, tmp string) (string, error) {
	src := os.Stdin
	if p != "-" {
		f, err := os.Open(p)
		if err != nil {
			return "", failure(err)
		}
		defer f.Close()
		src = f
	} else if term.IsTerminal(src.Fd()) {
		return "", usageError("- is standard input, and it is a terminal: pipe a trace into xfertop (cmd | xfertop analyze -), or give a file")
	} else if in, ok := stdinInPlace(); ok {
		namesOf(ctx).stand(in, pipeName(p))
		return in, nil
	}
	namesOf(ctx).stand(tmp, pipeName(p))
	head := make([]byte, importers.DetectBytesNeeded)
	n, err := io.ReadFull(src, head)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return "", failure(fmt.Errorf("%s: reading the pipe: %w", pipeName(p), err))
	}
	head = head[:n]
	if _, err := importers.DetectBytes(tmp, head); err != nil {
		return "", dataError(err)
	}
	limit, why := spoolLimit(filepath.Dir(filepath.Dir(tmp)))
	dst, err := os.Create(tmp)
	if err != nil {
		return "", failure(fmt.Errorf("%s: a pipe is kept in a temporary file to be read: %w", pipeName(p), err))
	}
	w := &spoolWriter{w: dst}
	copied, err := io.Copy(w, io.LimitReader(io.MultiReader(bytes.NewReader(head), src), limit+1))
	if cerr := dst.Close(); err == nil && cerr != nil {
		err, w.err = cerr, cerr
	}
	switch {
	case w.err != nil:
		return "", failure(fmt.Errorf("%s: writing the pipe's temporary file in %s after %s: %w (set TMPDIR to a directory with room, or give a file)",
			pipeName(p), filepath.Dir(filepath.Dir(tmp)), units.Bytes(w.n), rootCause(w.err)))
	case err != nil:
		return "", failure(fmt.Errorf("%s: reading the pipe: %w", pipeName(p), err))
	case copied > limit:
		return "", dataError(fmt.Errorf("%s: the pipe holds more than %s%s: a pipe is kept in a temporary file to be read (it can be read only once), up to that; give a file", pipeName(p), units.Bytes(limit), why))
	}
	return tmp, nil
}

// spoolWriter tells a failure to write the temporary file (a full disk) from a failure to read
// the pipe, and counts what was written.
type spoolWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (s *spoolWriter) Write(b []byte) (int, error) {
	n, err := s.w.Write(b)
	s.n += int64(n)
	if err != nil {
		s.err = err
	}
	return n, err
}

// spoolLimit is the most a pipe may put in the temporary directory dir ($TMPDIR): maxSpoolBytes,
// or half of dir's free space when that is less (a pipe spooled there must not fill a disk others use), and
// the reason to give when it is the free space that bounds it.
func spoolLimit(dir string) (int64, string) {
	free, ok := freeBytes(dir)
	if !ok || free/2 >= maxSpoolBytes {
		return maxSpoolBytes, ""
	}
	return free / 2, fmt.Sprintf(", half the free space of the temporary directory %s (set TMPDIR to one with more room)", dir)
}

// stdinInPlace returns a path that opens standard input's own file from its start when standard
// input is a regular file (xfertop analyze - < FILE), so that it need not be copied. Only on
// Linux, where opening /dev/stdin opens the file anew rather than sharing its offset.
func stdinInPlace() (string, bool) {
	if runtime.GOOS != "linux" {
		return "", false
	}
	st, err := os.Stdin.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return "", false
	}
	return "/dev/stdin", true
}
