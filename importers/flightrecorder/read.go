package flightrecorder

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Format names the importer.
const Format = "flight-recorder"

// MaxFileBytes bounds one dump file (torch's default ring of 2,000 entries dumps a few MiB).
const MaxFileBytes = 256 << 20

// Sniff reports whether a file's first bytes are a Flight Recorder dump: a pickle (any pickle:
// the reader says what it holds), or a JSON object naming the dump's fields (nlohmann writes its
// keys sorted, so an entry's collective_seq_id or the comm_lib_version come first).
func Sniff(head []byte) bool {
	if len(head) >= 2 && head[0] == opProto && head[1] >= 2 && head[1] <= 5 {
		return true
	}
	t := bytes.TrimLeft(head, " \t\r\n\ufeff")
	if len(t) == 0 || t[0] != '{' {
		return false
	}
	for _, k := range []string{`"pg_config"`, `"comm_lib_version"`, `"collective_seq_id"`, `"pg_status"`} {
		if bytes.Contains(t, []byte(k)) {
			return true
		}
	}
	return false
}

// rankName finds a dump's rank at the end of its file name: torch writes
// TORCH_NCCL_DEBUG_INFO_TEMP_FILE followed by the rank (nccl_trace_rank_3); an extension a user
// added (.pkl, .json) is allowed.
var rankName = regexp.MustCompile(`^(.*?)(\d+)(\.(?:pkl|pickle|json))?$`)

// SamePrefix reports whether two paths are named as dumps of one job: in one directory, names
// ending in a rank after one prefix (nccl_trace_rank_0 and nccl_trace_rank_3).
func SamePrefix(a, b string) bool {
	if filepath.Dir(a) != filepath.Dir(b) {
		return false
	}
	ma, mb := rankName.FindStringSubmatch(filepath.Base(a)), rankName.FindStringSubmatch(filepath.Base(b))
	return ma != nil && mb != nil && ma[1] == mb[1] && ma[1] != ""
}

// Expand turns the paths a user gave into dump files: a directory becomes the files in it whose
// names end in a rank and whose content is a dump, all of one prefix, and the files of that
// prefix whose content is not a dump (empty, cut short, garbled: the import warns about each and
// leaves it out). A directory holding no dump is an error naming it.
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
			return nil, fmt.Errorf("%s: no Flight Recorder dumps (files named PREFIX<rank>, e.g. nccl_trace_rank_0) in the directory", p)
		}
		out = append(out, files...)
	}
	return out, nil
}

// dirFiles lists the dumps directly in dir, in rank order; dumps of two prefixes are an error.
func dirFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	type file struct {
		path string
		rank int
	}
	// Files named like a dump that are none count only where their prefix is the dumps': a
	// stray "notes1.txt" is no rank's dump, a "nccl_trace_rank_3" beside rank 0's is one that
	// could not be read.
	byPrefix, others := map[string][]file{}, map[string][]file{}
	for _, e := range ents {
		m := rankName.FindStringSubmatch(e.Name())
		if e.IsDir() || m == nil {
			continue
		}
		p := filepath.Join(dir, e.Name())
		r, _ := strconv.Atoi(m[2])
		if !sniffFile(p) {
			others[m[1]] = append(others[m[1]], file{p, r})
			continue
		}
		byPrefix[m[1]] = append(byPrefix[m[1]], file{p, r})
	}
	if len(byPrefix) > 1 {
		var ps []string
		for p := range byPrefix {
			ps = append(ps, strconv.Quote(p))
		}
		sort.Strings(ps)
		return nil, fmt.Errorf("%s: Flight Recorder dumps of %d prefixes (%s): give the files of one job", dir, len(ps), strings.Join(ps, ", "))
	}
	var out []string
	for prefix, fs := range byPrefix {
		fs = append(fs, others[prefix]...)
		sort.Slice(fs, func(a, b int) bool { return fs[a].rank < fs[b].rank })
		for _, f := range fs {
			out = append(out, f.path)
		}
	}
	return out, nil
}

func sniffFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	return Sniff(head[:n])
}

// IsDir reports whether path is a directory holding Flight Recorder dumps.
func IsDir(path string) bool {
	st, err := os.Stat(path)
	if err != nil || !st.IsDir() {
		return false
	}
	files, err := dirFiles(path)
	return err == nil && len(files) > 0
}

// readFile reads one dump, pickle or JSON as its first bytes say, and settles its rank: the
// dump's own "rank" when it has one, else the digits its file name ends in.
func readFile(path string, sets *rankSets, lim limits) (*dump, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var head [1]byte
	n, _ := io.ReadFull(f, head[:])
	var src io.Reader = io.MultiReader(bytes.NewReader(head[:n]), f)
	if n == 1 && head[0] != opProto { // JSON: a string or number past the bound is refused as it is read
		src = &tokenGuard{r: src, max: lim.tokenBytes}
	}
	b, err := io.ReadAll(io.LimitReader(src, lim.fileBytes+1))
	var te *TokenError
	if errors.As(err, &te) {
		return nil, &FormatError{File: path, Offset: te.Offset, Reason: te.Error()}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > lim.fileBytes {
		return nil, &FormatError{File: path, Offset: lim.fileBytes, Reason: fmt.Sprintf("more than %d bytes (--max-input-bytes; 256 MiB unless given): not one rank's Flight Recorder dump", lim.fileBytes)}
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, &FormatError{File: path, Offset: 0, Reason: "empty file: not a Flight Recorder dump"}
	}
	d, err := decode(b, sets)
	if err != nil {
		var fe *FormatError
		if errors.As(err, &fe) {
			fe.File = path
			return nil, fe
		}
		return nil, &FormatError{File: path, Offset: -1, Reason: err.Error()}
	}
	if d.rank < 0 {
		m := rankName.FindStringSubmatch(filepath.Base(path))
		if m == nil {
			return nil, &FormatError{File: path, Offset: -1, Reason: "the dump does not say its rank and the file name does not end in it (torch names dumps PREFIX<rank>, e.g. nccl_trace_rank_0)"}
		}
		r, err := strconv.Atoi(m[2])
		if err != nil || r >= maxPGRanks {
			return nil, &FormatError{File: path, Offset: -1, Reason: fmt.Sprintf("rank %s in the file name is out of range", m[2])}
		}
		d.rank = r
	}
	return d, nil
}

// decode reads a dump's bytes: a pickle, or JSON.
func decode(b []byte, sets *rankSets) (*dump, error) {
	var v any
	if len(b) > 0 && b[0] == opProto {
		p, err := unpickle(b)
		if err != nil {
			return nil, err
		}
		budget := len(b) + 64
		if v, err = plain(p, 0, &budget); err != nil {
			return nil, &FormatError{Offset: -1, Reason: err.Error()}
		}
	} else {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			off := dec.InputOffset()
			reason := err.Error()
			var se *json.SyntaxError
			switch {
			case errors.As(err, &se):
				off = se.Offset
			case errors.Is(err, io.ErrUnexpectedEOF):
				// The decoder's offset is where the value it was reading began (byte 0 for the
				// dump itself); what is wrong is where the file ends.
				off, reason = int64(len(b)), "the JSON ends before it is complete"
			}
			return nil, &FormatError{Offset: off, Reason: "not a Flight Recorder dump (pickle or JSON): " + reason}
		}
		v = jsonInts(v, 0)
	}
	d, err := parseDump(v, sets)
	if err != nil {
		return nil, &FormatError{Offset: -1, Reason: err.Error()}
	}
	return d, nil
}

// jsonInts turns JSON's integral numbers into int64, as a pickle's are, so that one parser reads
// both (depth bounded as a pickle's).
func jsonInts(v any, depth int) any {
	if depth > maxDepth {
		return nil
	}
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		if f, err := x.Float64(); err == nil {
			return f
		}
		return nil
	case []any:
		for i := range x {
			x[i] = jsonInts(x[i], depth+1)
		}
	case map[string]any:
		for k := range x {
			x[k] = jsonInts(x[k], depth+1)
		}
	}
	return v
}
