package trace

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzImport: the trace importer never panics or hangs on arbitrary input, and its errors name the
// file.
func FuzzImport(f *testing.F) {
	f.Add([]byte(`{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1.5,"dur":2,"args":{"device":0,"stream":7,"correlation":3}},{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1,"dur":1,"args":{"correlation":3}}],"distributedInfo":{"rank":2}}`))
	f.Add([]byte(`{"traceEvents":[{"ph":"X","cat":"Memcpy","name":"Memcpy HtoD (Pinned -> Device)","pid":0,"tid":"stream 7","ts":10,"dur":5,"args":{"bytes":1024}}]}`))
	f.Add([]byte(`{"traceEvents":[{"ph":"X","name":"ProfilerStep#4","ts":0,"dur":9},{"ph":"X","cat":"kernel","name":"ncclDevKernel_AllReduce_Sum_f32_RING_LL","ts":1,"dur":1,"args":{"In msg nelems":10,"dtype":"Float","Group size":8}}]}`))
	f.Add([]byte(`{"xfertopMetadata":{"scenario":"x"},"traceEvents":[{"ph":"X","name":"k","ts":0,"dur":1,"args":{"xfertop":{"k":5,"s":0,"e":1000,"l":"k\u00e9"}}}]}`))
	f.Add([]byte(`{"traceEvents":[{"ph":"X","name":"a\"b\\u0041","pid":"p","tid":"t","ts":1e3,"dur":-1}]}`))
	f.Add([]byte(`{"traceEvents": [`))
	f.Fuzz(func(t *testing.T, data []byte) {
		im, err := Import("fuzz.json", bytes.NewReader(data), Options{})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.json") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, e := range im.Events {
			if int(e.Label) >= im.Strings.Len() {
				t.Fatalf("event label %d outside the string table (%d)", e.Label, im.Strings.Len())
			}
		}
		_, _ = Import("fuzz.json", bytes.NewReader(data), Options{LikeHTA: true})
	})
}
