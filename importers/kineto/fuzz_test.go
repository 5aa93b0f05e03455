package kineto

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// FuzzImport: the trace importer never panics or hangs on arbitrary input, its errors name the
// file, and the stream it reads does not change what it finds: one byte at a time, it imports the
// same events or fails with the same error; with a tiny token limit, it does the same or refuses a
// token.
func FuzzImport(f *testing.F) {
	f.Add([]byte(`{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1.5,"dur":2,"args":{"device":0,"stream":7,"correlation":3}},{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1,"dur":1,"args":{"correlation":3}}],"distributedInfo":{"rank":2}}`))
	// A graph launch and two of its kernels, one launched on its own, in two ranks' files.
	f.Add([]byte(`{"traceEvents":[{"ph":"X","cat":"cuda_runtime","name":"cudaGraphLaunch_v10000","pid":1,"tid":1,"ts":1,"dur":3,"args":{"correlation":5}},{"ph":"X","cat":"kernel","name":"g","pid":0,"tid":7,"ts":5,"dur":2,"args":{"device":0,"stream":7,"correlation":5}},{"ph":"X","cat":"kernel","name":"h","pid":0,"tid":7,"ts":8,"dur":2,"args":{"device":0,"stream":7,"correlation":5}},{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":9,"dur":1,"args":{"correlation":6}},{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":11,"dur":2,"args":{"device":0,"stream":7,"correlation":6}}],"distributedInfo":{"rank":1}}`))
	f.Add([]byte(`{"traceEvents":[{"ph":"X","cat":"Memcpy","name":"Memcpy HtoD (Pinned -> Device)","pid":0,"tid":"stream 7","ts":10,"dur":5,"args":{"bytes":1024}}]}`))
	f.Add([]byte(`{"traceEvents":[{"ph":"X","name":"ProfilerStep#4","ts":0,"dur":9},{"ph":"X","cat":"kernel","name":"ncclDevKernel_AllReduce_Sum_f32_RING_LL","ts":1,"dur":1,"args":{"In msg nelems":10,"dtype":"Float","Group size":8}}]}`))
	f.Add([]byte(`{"xfertopMetadata":{"scenario":"x"},"traceEvents":[{"ph":"X","name":"k","ts":0,"dur":1,"args":{"xfertop":{"k":5,"s":0,"e":1000,"l":"k\u00e9"}}}]}`))
	// A sequence op's id (top bit set), and fields out of their types' range.
	f.Add([]byte(`{"traceEvents":[{"ph":"X","name":"k","ts":0,"dur":1,"args":{"xfertop":{"k":5,"o":9223373136366403584,"d":-1,"h":65535}}},{"ph":"X","name":"k","ts":0,"dur":1,"args":{"xfertop":{"o":18446744073709551616,"h":65536,"pr":-129}}}]}`))
	f.Add([]byte(`{"traceEvents":[{"ph":"X","name":"a\"b\\u0041","pid":"p","tid":"t","ts":1e3,"dur":-1}]}`))
	f.Add([]byte(`{"traceEvents": [`))
	// The JSON Array Format: closed, empty, and ended without its ']' (after an event, a comma).
	f.Add([]byte(`[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":2,"args":{"device":0,"stream":7}}]`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":2},{"ph":"X","name":"b","pid":1,"tid":1,"ts":4,"dur":2},`))
	f.Add([]byte(` [ {"ph":"X","name":"a","ts":1,"dur":2} `))
	f.Add([]byte(`[{"ph":"X","name":"a","ts":1,"dur":2}] [`))
	// The errors and warnings of hostile input.
	f.Add([]byte(`{"traceEvents":[{"ph":"X","cat":"gpu_memcpy","name":"m","ts":1,"dur":1,"args":{"bytes":9223372036854775807}},{"ph":"X","cat":"gpu_memcpy","name":"m","ts":2,"dur":1,"args":{"bytes":-9.2e18}}]}`))
	f.Add([]byte(`{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","ts":1682725898079292,"dur":1e12},{"ph":"X","cat":"kernel","name":"k","ts":0,"dur":1},{"ph":"X","cat":"kernel","name":"k","ts":1e300,"dur":1}]}`))
	f.Add([]byte(`{"traceEvents":[{"ph":"X","cat":"kernel","name":"ncclKernel_AllGather","ts":1,"dur":1,"args":{"In msg nelems":4611686018427387904,"Group size":70000,"stream":-1,"device":-4}}],"distributedInfo":{"rank":1e99}}`))
	f.Add([]byte(`{"traceEvents":[{"args":{"a":[[[[[[[[{"b":[1,2,{"c":null}]}]]]]]]]]}}]}`))
	f.Add([]byte("{\x00\xff junk"))
	// A byte-order mark before the JSON; a gzip member followed by bytes that are no gzip.
	f.Add([]byte("\ufeff[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":2}]"))
	f.Add([]byte("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff\x8a\x8e\x05\x04\x00\x00\xff\xff\x29\xbb\x4c\x0d\x02\x00\x00\x00garbage!!"))
	f.Add([]byte(`{"traceEvents":[{"name":"\ud83d\ude00\ud800\u0041"}]} x`))
	f.Add([]byte(`{"traceEvents":[{"ts":01},{"ts":-},{"ts":1.},{"ts":1e}]}`))
	f.Add([]byte("\x1f\x8b\x08\x00\x00\x00\x00\x00"))
	f.Add([]byte(`{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","ts":9,"dur":1,"args":{"correlation":1}},{"ph":"X","cat":"cuda_runtime","name":"l","ts":3,"dur":1,"args":{"correlation":1}},{"ph":"X","cat":"kernel","name":"j","ts":2,"dur":1,"args":{"correlation":2}},{"ph":"X","cat":"cuda_runtime","name":"l","ts":1,"dur":1,"args":{"correlation":2}},{"ph":"X","cat":"kernel","name":"i","ts":5,"dur":1}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		im, err := Import("fuzz.json", bytes.NewReader(data), Options{})
		if err != nil && !strings.HasPrefix(err.Error(), "fuzz.json") {
			t.Fatalf("error does not name the file: %v", err)
		}
		if err == nil {
			for _, e := range im.Events {
				if int(e.Label) >= im.Strings.Len() {
					t.Fatalf("event label %d outside the string table (%d)", e.Label, im.Strings.Len())
				}
				if e.End < e.Start {
					t.Fatalf("event ends before it starts: %+v", e)
				}
			}
		}
		im1, err1 := Import("fuzz.json", iotest.OneByteReader(bytes.NewReader(data)), Options{})
		if (err == nil) != (err1 == nil) || (err != nil && err.Error() != err1.Error()) {
			t.Fatalf("whole: %v; one byte at a time: %v", err, err1)
		}
		if err == nil && (!reflect.DeepEqual(im.Events, im1.Events) || !reflect.DeepEqual(im.Strings.All(), im1.Strings.All())) {
			t.Fatal("one byte at a time imports other events")
		}
		im2, err2 := Import("fuzz.json", bytes.NewReader(data), Options{MaxTokenBytes: 4})
		var le *LimitError
		if err2 != nil && errors.As(err2, &le) {
			if le.Limit != 4 {
				t.Fatalf("limit %d", le.Limit)
			}
		} else if (err == nil) != (err2 == nil) || (err == nil && !reflect.DeepEqual(im.Events, im2.Events)) {
			t.Fatalf("a small window changes the result: %v / %v", err, err2)
		}
		_, _ = Import("fuzz.json", bytes.NewReader(data), Options{LikeHTA: true})

		// The external merge sort (a buffer of 4 events, merges of 2 runs) imports the same.
		dir := t.TempDir()
		im3, err3 := Import("fuzz.json", bytes.NewReader(data), Options{TempDir: dir, reorder: 4, fanIn: 2})
		if (err == nil) != (err3 == nil) || (err != nil && err.Error() != err3.Error()) ||
			(err == nil && (!reflect.DeepEqual(im.Events, im3.Events) || !reflect.DeepEqual(im.Warnings, im3.Warnings))) {
			t.Fatalf("the external sort imports otherwise: %v / %v", err, err3)
		}
		if left, _ := os.ReadDir(dir); len(left) > 0 {
			t.Fatalf("%d temporary files left", len(left))
		}
		// The importer that held every event imports the same events (its error for a truncated
		// file did not name the offset).
		old, errOld := legacyImport("fuzz.json", bytes.NewReader(data), Options{})
		if (err == nil) != (errOld == nil) || (err != nil && err.Error() != errOld.Error() && !errors.Is(err, errTruncated)) {
			t.Fatalf("streaming: %v; whole: %v", err, errOld)
		}
		if err == nil && !reflect.DeepEqual(named(im), named(old)) {
			t.Fatalf("streaming and whole imports differ:\n%v\n%v", named(im), named(old))
		}
		// A trace cut short fails with an error naming the file and the byte offset.
		if err == nil && len(data) > 2 {
			_, errCut := Import("fuzz.json", bytes.NewReader(data[:len(data)/2]), Options{})
			if errCut != nil && (!strings.HasPrefix(errCut.Error(), "fuzz.json: ") || !strings.Contains(errCut.Error(), "byte offset")) {
				t.Fatalf("cut in half: %v; want an error naming the file and the byte offset", errCut)
			}
		}
	})
}

// named is an import's events with their names, as text: label ids are not compared, only the
// names they stand for.
func named(im *Imported) []string {
	out := make([]string, len(im.Events))
	for i, e := range im.Events {
		l := im.Strings.Lookup(e.Label)
		e.Label = 0
		out[i] = fmt.Sprintf("%+v %q", e, l)
	}
	return out
}
