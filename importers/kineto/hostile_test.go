package kineto

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// allocated returns the bytes f allocates (runtime.MemStats.TotalAlloc, which does not depend on
// when the collector runs).
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// repeat is an endless reader of one pattern, counting what was read from it.
type repeat struct {
	pattern []byte
	read    int64
}

func (r *repeat) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = r.pattern[(r.read+int64(i))%int64(len(r.pattern))]
	}
	r.read += int64(len(p))
	return len(p), nil
}

// gzipOf compresses head followed by n bytes of pad.
func gzipOf(t *testing.T, head string, pad byte, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write([]byte(head))
	chunk := bytes.Repeat([]byte{pad}, 1<<20)
	for ; n > 0; n -= len(chunk) {
		zw.Write(chunk[:min(n, len(chunk))])
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

const memBound = 4 << 20 // generous: the window, the gzip state and the error, not the input

// A gzip bomb stops at the decompressed-size limit, with an error naming it, in bounded memory.
func TestGzipBomb(t *testing.T) {
	// 32 MiB of spaces inside a valid start: nothing to refuse but the size.
	bomb := gzipOf(t, `{"traceEvents":[`, ' ', 32<<20)
	var err error
	got := allocated(func() {
		_, err = Import("bomb.json.gz", bytes.NewReader(bomb), Options{MaxInputBytes: 1 << 20})
	})
	const want = "bomb.json.gz: more than 1 MiB of JSON (after decompression): that is the input limit"
	var le *LimitError
	if err == nil || err.Error() != want || !errors.As(err, &le) || le.What != "input" || le.Limit != 1<<20 {
		t.Fatalf("Import(bomb) = %v; want %q", err, want)
	}
	if got > memBound {
		t.Errorf("the bomb cost %d bytes of allocation; want under %d", got, memBound)
	}
	// A bomb of zeros is refused at its first byte, whatever the limit.
	zeros := gzipOf(t, "", 0, 32<<20)
	_, err = Import("zeros.json.gz", bytes.NewReader(zeros), Options{})
	if want := `zeros.json.gz: not valid JSON at byte offset 0 of the decompressed data: expected '{'`; err == nil || err.Error() != want {
		t.Fatalf("Import(zeros) = %v; want %q", err, want)
	}
}

// Junk fails at its first invalid byte, having read no more than a window of it.
func TestJunkFile(t *testing.T) {
	src := &repeat{pattern: []byte("{\x8f\x00junk\xff")}
	var err error
	got := allocated(func() {
		_, err = Import("junk.json", io.LimitReader(src, 2<<30), Options{})
	})
	const want = "junk.json: not valid JSON at byte offset 1: expected a quoted key"
	if err == nil || err.Error() != want {
		t.Fatalf("Import(junk) = %v; want %q", err, want)
	}
	if src.read > 1<<20 {
		t.Errorf("read %d bytes of a junk file before failing; want at most a window", src.read)
	}
	if got > memBound {
		t.Errorf("the junk cost %d bytes of allocation; want under %d", got, memBound)
	}
}

// A string or a number longer than the token limit is refused where it starts; a long string that
// is only skipped is not kept in memory.
func TestHugeToken(t *testing.T) {
	huge := strings.Repeat("a", 8<<20)
	tests := []struct {
		name, src string
		opts      Options
		want      string
	}{
		{"name", `{"traceEvents":[{"ph":"X","name":"` + huge + `"}]}`, Options{MaxTokenBytes: 1 << 20},
			"t.json: the string at byte offset 33 is longer than 1 MiB: that is the limit for one token"},
		{"key", `{"traceEvents":[],"` + huge + `":1}`, Options{MaxTokenBytes: 1 << 20},
			"t.json: the string at byte offset 18 is longer than 1 MiB: that is the limit for one token"},
		{"skipped", `{"traceEvents":[{"ph":"X","args":{"stack":["` + huge + `"]}}]}`, Options{MaxTokenBytes: 1 << 20},
			"t.json: the string at byte offset 43 is longer than 1 MiB: that is the limit for one token"},
		{"number", `{"traceEvents":[{"ph":"X","ts":1` + strings.Repeat("0", 8<<20) + `}]}`, Options{MaxTokenBytes: 1 << 20},
			"t.json: the number at byte offset 31 is longer than 1 MiB: that is the limit for one token"},
		{"skipped within the limit", `{"traceEvents":[{"ph":"X","args":{"stack":["` + huge + `"]}}]}`, Options{}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			got := allocated(func() {
				_, err = Import("t.json", strings.NewReader(tc.src), tc.opts)
			})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else if err == nil || err.Error() != tc.want {
				t.Fatalf("Import = %v; want %q", err, tc.want)
			}
			if got > memBound {
				t.Errorf("a %d-byte token cost %d bytes of allocation; want under %d", len(huge), got, memBound)
			}
		})
	}
}

// Numbers out of range are named in warnings and never reach a total.
func TestOverflowingNumbers(t *testing.T) {
	const e0 = `"pid":0,"tid":7,"args":{"device":0,"stream":7,`
	ev := func(name, cat, times, args string) string {
		return `{"ph":"X","cat":"` + cat + `","name":"` + name + `",` + times + `,` + e0 + args + `}}`
	}
	events := []string{
		ev("Memcpy HtoD (Pinned -> Device)", "gpu_memcpy", `"ts":1682725898079292,"dur":10`, `"bytes":1024`),
		ev("Memcpy HtoD (Pinned -> Device)", "gpu_memcpy", `"ts":1682725898079302,"dur":10`, `"bytes":9223372036854775807`),
		ev("Memcpy DtoH (Device -> Pinned)", "gpu_memcpy", `"ts":1682725898079312,"dur":10`, `"bytes":-9223372036854775808`),
		ev("Memcpy DtoH (Device -> Pinned)", "gpu_memcpy", `"ts":1682725898079322,"dur":10`, `"bytes":9.2e18`),
		ev("neg", "kernel", `"ts":1682725898079332,"dur":-5`, `"correlation":1`),
		ev("long", "kernel", `"ts":1682725898079342,"dur":1e12`, `"correlation":2`),
		ev("ancient", "kernel", `"ts":1,"dur":1`, `"correlation":3`),
		ev("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "kernel", `"ts":1682725898079352,"dur":4`,
			`"In msg nelems":4611686018427387904,"Out msg nelems":4611686018427387904,"dtype":"Float","Group size":70000`),
		ev("ncclDevKernel_AllGather_RING_LL", "kernel", `"ts":1682725898079362,"dur":4`,
			`"In msg nelems":1099511627776,"Out msg nelems":8,"dtype":"Double","Group size":8`),
		ev("far", "kernel", `"ts":1e300,"dur":1`, `"correlation":4`),
		ev("k", "kernel", `"ts":1682725898079372,"dur":2`, `"stream":-3`),
	}
	src := `{"traceEvents":[` + strings.Join(events, ",") + `],"distributedInfo":{"rank":-1}}`
	im, err := Import("big.json", strings.NewReader(src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`big.json: traceEvents[1] "Memcpy HtoD (Pinned -> Device)": args.bytes 9223372036854775807 is out of range (0 to 1 TiB): taken as unknown`,
		`big.json: traceEvents[2] "Memcpy DtoH (Device -> Pinned)": args.bytes -9223372036854775808 is out of range (0 to 1 TiB): taken as unknown`,
		`big.json: traceEvents[3] "Memcpy DtoH (Device -> Pinned)": args.bytes is not an integer within ±2^62: taken as unknown`,
		`big.json: traceEvents[4] "neg": negative dur -5µs: taken as 0`,
		`big.json: traceEvents[5] "long": dur 277h46m40s is longer than 24 h: event left out`,
		`big.json: traceEvents[7] "ncclDevKernel_AllReduce_Sum_f32_RING_LL": args.In/Out msg nelems 4611686018427387904 is out of range (0 to 2^40): size taken as unknown`,
		`big.json: traceEvents[7] "ncclDevKernel_AllReduce_Sum_f32_RING_LL": args.Group size 70000 is out of range (0 to 65535): taken as unknown`,
		`big.json: traceEvents[8] "ncclDevKernel_AllGather_RING_LL": message size 8796093022208 is out of range (0 to 1 TiB): taken as unknown`,
		`big.json: traceEvents[9] "far": ts is not a time within 146 years of the epoch: event left out`,
		`big.json: traceEvents[10] "k": args.stream is not a stream id: taken as the default stream`,
		`big.json: distributedInfo.rank is not a rank: the file's position (0) is used`,
		`big.json: traceEvents[6] "ancient": ts lies 53.3 years from the trace's other events (more than 24 h): event left out`,
	}
	if strings.Join(im.Warnings, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(im.Warnings, "\n"), strings.Join(want, "\n"))
	}
	var total int64
	for _, e := range im.Events {
		total += e.Bytes
		if e.End < e.Start || e.Start < 0 || e.End > 1_000_000 {
			t.Errorf("event %s spans [%d, %d]", im.Strings.Lookup(e.Label), e.Start, e.End)
		}
		if e.Kind == timeline.KindCollective && e.Ranks != 0 && e.Ranks != 8 {
			t.Errorf("group size %d", e.Ranks)
		}
	}
	if total != 1024 {
		t.Errorf("bytes total %d; want 1024 (the only valid count)", total)
	}
	if len(im.Events) != 8 {
		t.Errorf("%d events; want 8 (three left out)", len(im.Events))
	}
}

// Warnings stop at a screenful; the rest are counted.
func TestWarningsCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"traceEvents":[`)
	for i := range 50 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"ph":"X","cat":"kernel","name":"k","ts":10,"dur":-1,"args":{"device":0,"stream":7}}`)
	}
	b.WriteString(`]}`)
	im, err := Import("w.json", strings.NewReader(b.String()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Warnings) != maxWarnings+1 || im.Warnings[maxWarnings] != "30 more warnings like these" {
		t.Errorf("%d warnings, last %q", len(im.Warnings), im.Warnings[len(im.Warnings)-1])
	}
}

// The token limit is exact: a string of the limit's length (quotes included) passes, one byte more
// does not, wherever it lies in the read window.
func TestTokenLimitBoundary(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{{"12345678901", true}, {"123456789012", false}, {`1234567890\n`, false}, {`123456789\n`, true}} {
		src := `{"traceEvents":[{"name":"` + tc.name + `"}]}`
		_, err := Import("b.json", strings.NewReader(src), Options{MaxTokenBytes: 13})
		var le *LimitError
		if tc.ok != (err == nil) || (err != nil && (!errors.As(err, &le) || le.Offset != 24)) {
			t.Errorf("name %s under a 13-byte limit (the length of \"traceEvents\"): %v", tc.name, err)
		}
	}
}

// In a gzipped trace, an error's offset counts the decompressed bytes (what zcat shows), and the
// message says so; in a plain trace it counts the file's bytes, and says nothing more.
func TestGzipOffsets(t *testing.T) {
	gz := func(s string) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(s))
		zw.Close()
		return b.Bytes()
	}
	whole := gz(`{"traceEvents":[{"ph":"X","name":"` + strings.Repeat("a", 5000) + `"}]}`)
	tests := []struct {
		name string
		data []byte
		opts Options
		want string
	}{
		{"cut JSON", gz(`{"traceEvents":[{"ph":"X",`), Options{}, "the JSON ends before it is complete, at byte offset 26 of the decompressed data (is the file truncated?)"},
		{"bad JSON", gz(`{"traceEvents":[{"ph":5}]}`), Options{}, `not valid JSON at byte offset 22 of the decompressed data: event field "ph" must be a string`},
		{"cut gzip stream", whole[:len(whole)-12], Options{}, "of the decompressed data: gzip: unexpected EOF"},
		{"a token over the limit", whole, Options{MaxTokenBytes: 1024}, "the string at byte offset 33 of the decompressed data is longer than 1 KiB"},
		{"an exported field out of range", gz(`{"traceEvents":[{"ph":"X","name":"a","ts":1,"dur":1,"args":{"xfertop":{"h":65536}}}]}`), Options{}, "at byte offset 75 of the decompressed data: args.xfertop.h: 65536 is out of range"},
		{"plain: the file's offset", []byte(`{"traceEvents":[{"ph":5}]}`), Options{}, `not valid JSON at byte offset 22: event field`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Import("t.json.gz", bytes.NewReader(tc.data), tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Import = %v; want %q", err, tc.want)
			}
			if gzipped := tc.data[0] == 0x1f; !gzipped && strings.Contains(err.Error(), "decompressed") {
				t.Errorf("a plain file's error speaks of decompressed data: %v", err)
			}
		})
	}
}
