package kineto

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// decodeAll decodes data with or without the fast path and returns every event as the decoder
// handed it on (copied: its slices are reused), the header and the error.
func decodeAll(data []byte, opts Options, slowOnly bool) ([]rawEvent, *header, error) {
	var evs []rawEvent
	opts = opts.withDefaults()
	src, done, _, err := openStream("t.json", bytes.NewReader(data), opts.MaxInputBytes)
	if err != nil {
		return nil, nil, err
	}
	defer done()
	d := &decoder{s: newScanner("t.json", src, opts.MaxTokenBytes), floats: opts.LikeHTA, slowOnly: slowOnly,
		onEvent: func(e *rawEvent, _ *header) error {
			c := *e
			c.Name, c.Pid, c.Tid = slices.Clone(e.Name), slices.Clone(e.Pid), slices.Clone(e.Tid)
			c.Args.Xfertop.L = slices.Clone(e.Args.Xfertop.L)
			evs = append(evs, c)
			return nil
		}}
	h, err := d.run()
	return evs, h, err
}

// FuzzFastPath: the decoder's fast path (fast.go) reads every input as the general path does:
// the same events, field by field, the same header, the same error at the same offset; with the
// default limits, a tiny token limit, one that "traceEvents" is within but some arg keys are
// not, and --like-hta's floats.
func FuzzFastPath(f *testing.F) {
	f.Add([]byte(`{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1.5,"dur":2,"args":{"device":0,"stream":7,"correlation":3}},{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1,"dur":1,"args":{"correlation":3}}],"distributedInfo":{"rank":2}}`))
	f.Add([]byte(`{"traceEvents":[{"ph":"X","cat":"kernel","name":"ncclDevKernel_AllReduce","pid":0,"tid":"stream 7","ts":"12.5","dur":-1,"args":{"In msg nelems":"10","dtype":"Float","Group size":8.0,"stream":true,"device":[1],"Input Dims":[[2048,1024],[]],"x":{"a":{},"b":[null,false,true,-0.5e+3]}}}]}`))
	f.Add([]byte(`{"traceEvents":[ {} , { "ph" : "i" , "name":"a\"b\\u0041","s":"t\/\b\f\n\r\t\u00e9","ts":1e3,"dur":01} ]}`))
	f.Add([]byte(`{"traceEvents":[{"ph":1},{"cat":"x","ts":1-2},{"ts":1.},{"ts":1e},{"args":{"xfertop":{"k":5,"s":0,"e":1000,"l":"k"}}},{"name":"\ud83d\ude00"},{"a":tru},{"a":[1,]},{"a":{"b":1,}},{"args":{"bytes":99999999999999999999,"device":-9223372036854775808,"stream":+1}}]}`))
	f.Add([]byte(`{"traceEvents":[{"ts":-0,"dur":0.0001},{"ts":-12.5,"dur":1.23456},{"ts":9223372036854775,"dur":9223372036854},{"ts":99999999999999999999},{"ts":0,"dur":-0.5},{"ts":"7.25","dur":"x"},{"ts":1E+2,"dur":2e-3}]}`))
	f.Add([]byte(`{"traceEvents":[{"ph":"X","ts":1,"dur":2,"name":"n","name":"m","args":{"device":1},"args":{"stream":2,"device":"x"}}]}`))
	f.Add([]byte(`{"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":7,"tid":7,"ts":1682725898079292,"dur":8,"args":{"External id":1,"Input Dims":[[2048,1024],[1024,4096]],"Input type":["float","float"]}},` + "\n" +
		`{"ph":"X","cat":"kernel","name":"ampere_sgemm_128x64_nn","pid":0,"tid":7,"ts":1682725898079298.250,"dur":15.5,"args":{"External id":1,"queued":0,"device":0,"context":1,"stream":7,"correlation":1,"blocks per SM":4.8,"grid":[32,16,1],"est. achieved occupancy %":12}}]}`))
	f.Add([]byte(`{"traceEvents":[{"ph":"X","name":"k","args":{"device":0,"In msg nelems":1,"Out msg nelems":2,"correlation":3}}]}`))
	// Events of a shape learnt, then events that part from it: at a literal (other white space,
	// another key, a key longer or shorter), at a value the shape's reader refuses, an args
	// object where the shape had a plain value and the other way round, a repeated key.
	f.Add([]byte(`{"traceEvents":[{"ph":"X","cat":"kernel","name":"a","pid":0,"tid":7,"ts":1,"dur":2,"args":{"device":0,"stream":7}},{"ph":"X","cat":"kernel","name":"b","pid":0,"tid":7,"ts":3,"dur":4,"args":{"device":1,"stream":8}},{"ph":"X","cat":"kernel","name":"c","pid":0,"tid":7,"ts":5,"dur":6,"args":{"device":1,"streams":8}},{"ph": "X","cat":"kernel","name":"d","pid":0,"tid":7,"ts":7,"dur":8,"args":{"device":1,"stream":8}},{"ph":"X","cat":"kernel","name":"e","pid":"0","tid":7,"ts":"9","dur":1e1,"args":{"device":"x","stream":[8]}},{"ph":"X","cat":"kernel","name":"f","pid":0,"tid":7,"ts":11,"dur":12,"args":{"device":1,"stream":8},"name":"g"}]}`))
	f.Add([]byte(`{"traceEvents":[{"ph":"X","name":"a","ts":1,"args":7},{"ph":"X","name":"b","ts":2,"args":{"device":3}},{"ph":"X","name":"c","ts":3,"args":{"device":3}},{"ph":"X","name":"d","ts":4,"args":8},{"ph":"X","name":"e","ts":5,"args":{}},{"ph":"X","name":"f","ts":6,"args":{ }},{},{ },{"ph":"X","name":"g","ts":7,"args":{"xfertop":{"k":5}}},{"ph":"X","name":"h","ts":8,"args":  9}]}`))
	// Values read by a shape's own readers (shapeValue), then values of the same slots they leave
	// to the fast path's: a negative, 18 and 19 digits, a fraction, an exponent, a name with an
	// escape, one past the token limit of 14, a phase of two letters; then what is not JSON (a
	// leading zero, a control byte in a name, a string cut by the input's end).
	f.Add([]byte(`{"traceEvents":[{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"args":{"device":0,"stream":7,"correlation":12}},{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"args":{"device":1,"stream":8,"correlation":13}},` +
		`{"ph":"X","cat":"kernel","name":"g","pid":-1,"tid":7,"args":{"device":123456789012345678,"stream":1234567890123456789,"correlation":1.5}},` +
		`{"ph":"X","cat":"kernel","name":"g\"h","pid":1,"tid":2,"args":{"device":1e3,"stream":-0,"correlation":0}},` +
		`{"ph":"X","cat":"kernel","name":"a_name_longer_than_fourteen","pid":1,"tid":2,"args":{"device":2,"stream":3,"correlation":4}},` +
		`{"ph":"XY","cat":"kernel\n","name":"g","pid":1,"tid":2,"args":{"device":2,"stream":3,"correlation":4}},` +
		`{"ph":"X","cat":"kernel","name":"g","pid":1,"tid":07,"args":{"device":2,"stream":3,"correlation":4}}]}`))
	f.Add([]byte(`{"traceEvents":[{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7},{"ph":"X","cat":"kernel","name":"g` + "\x01" + `","pid":0,"tid":7}]}`))
	f.Add([]byte(`{"traceEvents":[{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7},{"ph":"X","cat":"kernel","name":"an unfinished string`))
	// Skipped args of a shape learnt: arrays fastSkipArray takes, then arrays it leaves to
	// fastSkipNested (a negative, a fraction, an escape, an object) and arrays that are not JSON
	// (a leading zero, a trailing comma, a control byte, too deep).
	f.Add([]byte(`{"traceEvents":[{"ph":"X","name":"a","ts":1,"args":{"External id":1,"Input Dims":[[2048,1024],[]],"grid":[32,16,1],"Input type":["float",""]}},` +
		`{"ph":"X","name":"a","ts":1,"args":{"External id":1,"Input Dims": [[2048, 1024], [ ]],"grid":[32 ,16,1 ],"Input type":[ "float" ,""]}},` +
		`{"ph":"X","name":"b","ts":2,"args":{"External id":2,"Input Dims":[[2048, 1024],[-1]],"grid":[3.5],"Input type":["a\"b",{"c":1}]}},` +
		`{"ph":"X","name":"c","ts":3,"args":{"External id":3,"Input Dims":[[01]],"grid":[1],"Input type":["x"]}},` +
		`{"ph":"X","name":"d","ts":4,"args":{"External id":4,"Input Dims":[[1,]],"grid":[1],"Input type":["x"]}},` +
		`{"ph":"X","name":"e","ts":5,"args":{"External id":5,"Input Dims":[[1]],"grid":[1],"Input type":["` + "\x01" + `"]}},` +
		`{"ph":"X","name":"f","ts":6,"args":{"External id":6,"Input Dims":` + strings.Repeat("[", 33) + strings.Repeat("]", 33) + `}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, opts := range []Options{{}, {MaxTokenBytes: 5}, {MaxTokenBytes: 14}, {LikeHTA: true}} {
			slow, hs, errs := decodeAll(data, opts, true)
			fast, hf, errf := decodeAll(data, opts, false)
			if fmt.Sprint(errs) != fmt.Sprint(errf) {
				t.Fatalf("%+v: general path: %v; fast path: %v", opts, errs, errf)
			}
			if !reflect.DeepEqual(hs, hf) {
				t.Fatalf("%+v: headers differ: %+v / %+v", opts, hs, hf)
			}
			if len(slow) != len(fast) {
				t.Fatalf("%+v: %d events by the general path, %d by the fast path", opts, len(slow), len(fast))
			}
			for i := range slow {
				if !reflect.DeepEqual(normal(slow[i]), normal(fast[i])) {
					t.Fatalf("%+v: event %d:\ngeneral %+v\nfast    %+v", opts, i, slow[i], fast[i])
				}
			}
		}
	})
}

// normal makes empty and nil slices alike, which the two paths may leave differently.
func normal(e rawEvent) rawEvent {
	for _, p := range []*[]byte{&e.Name, &e.Pid, &e.Tid, &e.Args.Xfertop.L} {
		if len(*p) == 0 {
			*p = nil
		}
	}
	return e
}

// TestFastPathTakesTheTraces: the benchmarks' traces go the fast way (else their figures would
// measure the general path), but for the events that straddle the end of the window.
func TestFastPathTakesTheTraces(t *testing.T) {
	for name, data := range map[string][]byte{"synthetic": syntheticKineto(20), "large": largeTraceBytes(t, 2000, 1)} {
		slow := 0
		src, done, _, err := openStream("t.json", bytes.NewReader(data), DefaultMaxInputBytes)
		if err != nil {
			t.Fatal(err)
		}
		d := &decoder{s: newScanner("t.json", src, DefaultMaxTokenBytes), onEvent: func(*rawEvent, *header) error { return nil }}
		d.slowEvents = &slow
		if _, err := d.run(); err != nil {
			t.Fatal(err)
		}
		done()
		if most := len(data)/readChunk + 1; slow > most {
			t.Errorf("%s: %d events read the general way; want at most %d (one per window)", name, slow, most)
		}
	}
}

// TestShapesTakeTheTraces: the events of the benchmarks' traces, and of the real traces where
// ../shared/data has them, are read by the shapes learnt from the first of each kind, but for
// those that straddle the end of the window; the shapes of the real traces stay few.
func TestShapesTakeTheTraces(t *testing.T) {
	inputs := map[string][]byte{"synthetic": syntheticKineto(20), "large": largeTraceBytes(t, 2000, 1)}
	for _, name := range []string{"resnet50_v100_worker0.pt.trace.json.gz", "sampled_rank-0.json.gz"} {
		if raw, err := os.ReadFile(data + name); err == nil {
			inputs[name] = raw
		}
	}
	for name, raw := range inputs {
		shaped, events := 0, 0
		src, done, _, err := openStream("t.json", bytes.NewReader(raw), DefaultMaxInputBytes)
		if err != nil {
			t.Fatal(err)
		}
		d := &decoder{s: newScanner("t.json", src, DefaultMaxTokenBytes), onEvent: func(*rawEvent, *header) error { events++; return nil }}
		d.shapedEvents = &shaped
		if _, err := d.run(); err != nil {
			t.Fatal(err)
		}
		done()
		t.Logf("%s: %d of %d events read by %d shape nodes", name, shaped, events, d.shapes.nodes)
		if name == "synthetic" || name == "large" {
			if most := d.shapes.nodes + events/(readChunk/400) + 8; events-shaped > most {
				t.Errorf("%s: %d of %d events read by a shape; want all but %d at most", name, shaped, events, most)
			}
		} else if shaped < events/2 {
			t.Errorf("%s: %d of %d events read by a shape; want most", name, shaped, events)
		}
	}
}

// TestShapesBounded: a trace whose events are each of a shape of their own fills the tree of
// shapes to its bound and no further, then stops trying it once most events are of no shape in
// it; its events are read as the general path reads them all along.
func TestShapesBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"traceEvents":[`)
	const n = 3 * maxShapeNodes
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"ph":"X","name":"n","ts":%d,"k%d":1,"args":{"device":%d}}`, i, i, i%4)
	}
	b.WriteString(`]}`)
	raw := []byte(b.String())
	slow, _, err := decodeAll(raw, Options{}, true)
	if err != nil {
		t.Fatal(err)
	}
	fast, _, err := decodeAll(raw, Options{}, false)
	if err != nil || !reflect.DeepEqual(slow, fast) {
		t.Fatalf("the fast path reads other events than the general path (%v)", err)
	}
	src, done, _, err := openStream("t.json", bytes.NewReader(raw), DefaultMaxInputBytes)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	d := &decoder{s: newScanner("t.json", src, DefaultMaxTokenBytes), onEvent: func(*rawEvent, *header) error { return nil }}
	if _, err := d.run(); err != nil {
		t.Fatal(err)
	}
	if d.shapes.nodes > maxShapeNodes || !d.shapes.full || d.shapes.root != nil {
		t.Errorf("%d shape nodes (most %d), full %v, tree kept %v; want a full tree given up", d.shapes.nodes, maxShapeNodes, d.shapes.full, d.shapes.root != nil)
	}
}

// TestDtypeName: every dtype whose size xfertop knows is recognised, and nothing else.
func TestDtypeName(t *testing.T) {
	for k := range dtypeSize {
		if got := dtypeName([]byte(k)); got != k {
			t.Errorf("dtypeName(%q) = %q", k, got)
		}
	}
	for _, k := range []string{"", "float32", "FLOAT", "Float8"} {
		if got := dtypeName([]byte(k)); got != "" {
			t.Errorf("dtypeName(%q) = %q; want none", k, got)
		}
	}
}

// TestParseInt: the fast decimal path agrees with strconv's, at the edges of int64 too.
func TestParseInt(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"-0", 0, true}, {"007", 7, true}, {"123456789012345678", 123456789012345678, true},
		{"9223372036854775807", 9223372036854775807, true}, {"-9223372036854775808", -9223372036854775808, true},
		{"9223372036854775808", 0, false}, {"+5", 5, true}, {"-", 0, false}, {"", 0, false},
		{"stream 7", 7, true}, {"7.0", 7, true}, {"7.5", 0, false}, {"1e3", 1000, true}, {"12a", 0, false},
	} {
		got, ok := parseInt([]byte(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseInt(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestStrStop: the search (eight bytes at a time, or 32 in a GOEXPERIMENT=simd build) finds the
// first quote, backslash or control character wherever it lies, in strings short of a word and
// past two vectors, past bytes that are near them (0x1f, 0x20, 0x21, 0x5b, 0x5d, 0x7f, 0x80,
// 0xff).
func TestStrStop(t *testing.T) { checkStrStop(t) }

// checkStrStop is TestStrStop's check of strStop as the build and the CPU have it.
func checkStrStop(t *testing.T) {
	fill := []byte{'a', 0x20, 0x21, 0x23, 0x5b, 0x5d, 0x7f, 0x80, 0xff, 0xa2, 0xdc}
	for n := range 70 {
		for pos := range n + 1 {
			for _, stop := range []byte{'"', '\\', 0x00, 0x1f, '\n'} {
				for _, f := range fill {
					b := bytes.Repeat([]byte{f}, n)
					want := n
					if pos < n {
						b[pos] = stop
						want = pos
						if pos+1 < n {
							b[pos+1] = '"' // a later stop does not hide the first
						}
					}
					if got := strStop(b, 0); got != want {
						t.Fatalf("strStop(%q) = %d; want %d", b, got, want)
					}
				}
			}
		}
	}
}

// TestRawEventReset: an event read after others is read as it is alone, on both paths: nothing of
// the one before it is left over (reset empties field by field, and fully after an export's args
// or a dtype).
func TestRawEventReset(t *testing.T) {
	events := []string{
		`{"ph":"X","name":"k","ts":0,"dur":1,"args":{"xfertop":{"k":5,"s":0,"e":1000,"l":"k","b":7,"d":2}}}`,
		`{"ph":"X","cat":"kernel","name":"ncclDevKernel_AllReduce","pid":0,"tid":7,"ts":1.5,"dur":2,"args":{"device":0,"stream":7,"correlation":3,"In msg nelems":10,"Out msg nelems":20,"dtype":"Float","Group size":8,"bytes":4}}`,
		`{}`,
		`{"ph":"X","cat":"kernel","name":"k","ts":"x","dur":true,"args":{"device":"d","stream":[1],"correlation":1.5}}`,
		`{"ph":"i","name":"e","pid":"p","tid":"t","ts":3}`,
		`{"args":{"xfertop":{"k":1}}}`,
		`{"name":"last"}`,
	}
	for _, slow := range []bool{true, false} {
		all, _, err := decodeAll([]byte(`{"traceEvents":[`+strings.Join(events, ",")+`]}`), Options{LikeHTA: true}, slow)
		if err != nil || len(all) != len(events) {
			t.Fatalf("slow=%v: %d events, %v", slow, len(all), err)
		}
		for i, ev := range events {
			alone, _, err := decodeAll([]byte(`{"traceEvents":[`+ev+`]}`), Options{LikeHTA: true}, slow)
			if err != nil || len(alone) != 1 {
				t.Fatalf("%s: %v", ev, err)
			}
			alone[0].Index = int64(i)
			if !reflect.DeepEqual(normal(all[i]), normal(alone[0])) {
				t.Errorf("slow=%v: event %d read after the others:\n%+v\nalone:\n%+v", slow, i, all[i], alone[0])
			}
		}
	}
}

// TestInternerCache: names interned through the cache of recent names get the ids the map gives
// them, whatever order they come in and however many share a cache entry, and the empty name is
// 0.
func TestInternerCache(t *testing.T) {
	n := newInterner(timeline.NewStrings())
	var names []string
	for i := range 3 * recentNames {
		names = append(names, fmt.Sprintf("kernel_%d", i), fmt.Sprintf("k%dx", i%7), strings.Repeat("a", i%40))
	}
	want := map[string]uint32{}
	for round := range 3 {
		for i, name := range names {
			if round == 1 {
				name = names[len(names)-1-i]
			}
			id := n.id([]byte(name))
			if w, ok := want[name]; ok && w != id {
				t.Fatalf("round %d: id(%q) = %d; was %d", round, name, id, w)
			}
			want[name] = id
			if got := n.strs.Lookup(id); got != name {
				t.Fatalf("id(%q) = %d, which names %q", name, id, got)
			}
		}
	}
	if id := n.id(nil); id != 0 {
		t.Fatalf("id of the empty name = %d; want 0", id)
	}
}

// TestEightDigits: eight bytes are taken as digits only when each is one ('/' and ':' lie either
// side of them), and their value is strconv's.
func TestEightDigits(t *testing.T) {
	near := []byte{'0', '1', '5', '9', '/', ':', 0x00, 0x30 + 0x80, 0xb9, 'a', ' ', '.'}
	for trial := range 20000 {
		var w [8]byte
		for i := range w {
			w[i] = byte('0' + (trial*7+i*3)%10)
			if (trial+i)%5 == 0 {
				w[i] = near[(trial/5+i)%len(near)]
			}
		}
		v := binary.LittleEndian.Uint64(w[:])
		n, err := strconv.ParseUint(string(w[:]), 10, 64)
		allDigits := err == nil && !bytes.ContainsAny(w[:], "+-")
		if got := eightDigits(v); got != allDigits {
			t.Fatalf("eightDigits(%q) = %v; want %v", w, got, allDigits)
		}
		if allDigits && eightDigitsValue(v) != n {
			t.Fatalf("eightDigitsValue(%q) = %d; want %d", w, eightDigitsValue(v), n)
		}
	}
}

// TestFastArgKey: every arg the decoder reads is matched by its words, with its colon; a key
// that only starts like one, or lacks its colon, is read as a string, as the general path does.
func TestFastArgKey(t *testing.T) {
	d := &decoder{s: &scanner{maxToken: DefaultMaxTokenBytes}}
	pad := strings.Repeat(" ", 24)
	for _, tc := range []struct {
		in   string
		key  int
		next int
		ok   bool
	}{
		{`"device":`, argDevice, 9, true}, {`"stream":`, argStream, 9, true}, {`"correlation":`, argCorrelation, 14, true},
		{`"bytes":`, argBytes, 8, true}, {`"In msg nelems":`, argInNelems, 16, true}, {`"Out msg nelems":`, argOutNelems, 17, true},
		{`"Group size":`, argGroupSize, 13, true}, {`"dtype":`, argDType, 8, true}, {`"xfertop":`, argXfertop, 10, true},
		{`"Out msg nelems"x`, 0, 0, false}, {`"Out msg nelems" :`, argOutNelems, 18, true}, {`"device_id":`, argOther, 12, true},
		{`"devic":`, argOther, 8, true}, {`"bytes"`, 0, 0, false}, {`"External id":`, argOther, 14, true},
	} {
		key, next, ok := d.fastArgKey([]byte(tc.in+pad), 0)
		if key != tc.key || next != tc.next || ok != tc.ok {
			t.Errorf("fastArgKey(%q) = %d, %d, %v; want %d, %d, %v", tc.in, key, next, ok, tc.key, tc.next, tc.ok)
		}
	}
	// A key past the token limit is left to the general path, which refuses it.
	d.s.maxToken = 14
	if _, _, ok := d.fastArgKey([]byte(`"In msg nelems":`+pad), 0); ok {
		t.Error(`fastArgKey read "In msg nelems" (15 bytes) under a 14-byte token limit`)
	}
	if key, _, ok := d.fastArgKey([]byte(`"correlation":`+pad), 0); !ok || key != argCorrelation {
		t.Error(`fastArgKey did not read "correlation" (13 bytes) under a 14-byte token limit`)
	}
}
