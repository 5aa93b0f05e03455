package kineto

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
)

// slicesThenKernels writes a trace of cpu CPU slices (each on a thread of its own, named apart),
// then, if kernels > 0, that many kernels and their launches: a PyTorch profiler trace whose GPU
// ops come after its CPU ops, or (kernels 0) a generic Chrome trace.
func slicesThenKernels(cpu, kernels int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"traceEvents":[`)
	for i := range cpu {
		fmt.Fprintf(&b, `{"ph":"X","cat":"cpu_op","name":"op%d","pid":7,"tid":%d,"ts":%d,"dur":5},`, i%50, i%9, 1000+10*((i*37)%cpu))
	}
	for i := range kernels {
		fmt.Fprintf(&b, `{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":7,"tid":7,"ts":%d,"dur":2,"args":{"correlation":%d}},`, 1000+20*i, i+1)
		fmt.Fprintf(&b, `{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":%d,"dur":4,"args":{"device":0,"stream":7,"correlation":%d}},`, 1004+20*i, i+1)
	}
	b.WriteString(`{"ph":"M","name":"process_name","pid":7,"tid":0,"args":{"name":"python"}}]}`)
	return b.Bytes()
}

// TestHeldSlices: a file's slices, made as a generic trace's until its first GPU op, are held
// apart: a PyTorch profiler trace whose 300 CPU slices come first sorts only its 8 events (in a
// buffer of 16: nothing spilled), while a generic trace's slices join the sort at its end, or as
// they are made once more than the bound are held; the events, names and warnings are those of
// the whole-file importer.
func TestHeldSlices(t *testing.T) {
	tests := []struct {
		name    string
		trace   []byte
		held    int
		spilled bool
		format  string
		events  int
	}{
		{"kineto, CPU slices first", slicesThenKernels(300, 4), 0, false, "kineto", 8},
		{"generic", slicesThenKernels(300, 0), 0, true, "chrome", 300},
		{"generic, more than the bound", slicesThenKernels(300, 0), 512, true, "chrome", 300},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want, err := legacyImport("t.json", bytes.NewReader(tc.trace), Options{})
			if err != nil {
				t.Fatal(err)
			}
			dir, spilled := t.TempDir(), 0
			got, err := Import("t.json", bytes.NewReader(tc.trace), Options{TempDir: dir, reorder: 16, held: tc.held,
				spilled: func(string) { spilled++ }})
			if err != nil {
				t.Fatal(err)
			}
			emptyDir(t, dir)
			if got.Format != tc.format || len(got.Events) != tc.events || (spilled > 0) != tc.spilled {
				t.Errorf("format %q, %d events, %d runs spilled; want %q, %d, spilled %v", got.Format, len(got.Events), spilled,
					tc.format, tc.events, tc.spilled)
			}
			if !reflect.DeepEqual(named(got), named(want)) || !reflect.DeepEqual(got.Warnings, want.Warnings) || got.Devices != want.Devices {
				t.Errorf("the events differ from the whole-file importer's:\n%v\n%v", named(got), named(want))
			}
		})
	}
}
