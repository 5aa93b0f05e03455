package kineto

import (
	"bytes"
	"compress/gzip"
	"strconv"
	"strings"
	"testing"
)

// TestGzipMembersAndBOM: a gzip file is read member after member as gzip -d reads it; bytes after
// the last member that are no gzip are named with their count and where they begin in the file,
// not called an unexpected end; a damaged member's error says "gzip:" once; a UTF-8 byte-order
// mark before the JSON is stepped over, offsets still counting it.
func TestGzipMembersAndBOM(t *testing.T) {
	const trace = `{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":2,"args":{"device":0,"stream":7}},` +
		`{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":5,"dur":2,"args":{"device":0,"stream":7}}]}`
	gz := func(s string) []byte {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write([]byte(s))
		w.Close()
		return b.Bytes()
	}
	one := gz(trace)
	badCRC := bytes.Clone(one)
	badCRC[len(badCRC)-6] ^= 0xff
	for _, c := range []struct {
		name   string
		data   []byte
		events int
		err    string
	}{
		{"one member", one, 2, ""},
		{"two members", append(gz(trace[:40]), gz(trace[40:])...), 2, ""},
		{"trailing bytes", append(bytes.Clone(one), "garbage!!"...), 0,
			"t.json.gz: read at byte offset " + itoa(len(trace)) + " of the decompressed data: gzip: 9 bytes after the gzip data, at byte offset " + itoa(len(one)) + " of the file: not gzip"},
		{"bad checksum", badCRC, 0, "gzip: invalid checksum"},
		{"byte-order mark", []byte("\ufeff" + trace), 2, ""},
		{"byte-order mark, gzipped", gz("\ufeff" + trace), 2, ""},
		{"byte-order mark, then bad JSON", []byte("\ufeff{\"traceEvents\":[{\"ph\":\"X\",@"), 0, "t.json.gz: not valid JSON at byte offset 29: expected a quoted key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			im, err := Import("t.json.gz", bytes.NewReader(c.data), Options{})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || strings.Contains(err.Error(), "gzip: gzip:") {
					t.Fatalf("Import = %v; want %q", err, c.err)
				}
				return
			}
			if err != nil || len(im.Events) != c.events {
				t.Fatalf("Import = %v; want %d events", err, c.events)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
