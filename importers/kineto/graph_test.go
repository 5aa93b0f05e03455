package kineto

import (
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// A cudaGraphLaunch is a graph launch, and the GPU ops correlated with it are marked as a graph's
// replayed ops, launched at the call's start: the same marks the engine gives. An op launched on
// its own beside them is not marked.
func TestGraphLaunchMarks(t *testing.T) {
	trace := `{"traceEvents":[
{"ph":"X","cat":"cuda_runtime","name":"cudaGraphLaunch","pid":7,"tid":7,"ts":100,"dur":3,"args":{"correlation":5}},
{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":110,"dur":4,"args":{"device":0,"stream":7,"correlation":5}},
{"ph":"X","cat":"kernel","name":"ncclDevKernel_AllReduce_Sum_f32_RING_LL","pid":0,"tid":7,"ts":120,"dur":4,"args":{"device":0,"stream":7,"correlation":5}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":7,"tid":7,"ts":130,"dur":2,"args":{"correlation":6}},
{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":140,"dur":4,"args":{"device":0,"stream":7,"correlation":6}}]}`
	im, err := Import("t.json", strings.NewReader(trace), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var launches, captured, plain int
	var launchAt int64 = -2
	for _, e := range im.Events {
		switch {
		case e.Kind == timeline.KindGraphLaunch:
			launches++
			launchAt = e.Start
		case e.Captured():
			captured++
			if e.Queued != launchAt {
				t.Errorf("captured op %+v queued at %d, want the graph launch's start %d", e, e.Queued, launchAt)
			}
		case e.Kind.IsBusy():
			plain++
		}
	}
	if launches != 1 || captured != 2 || plain != 1 {
		t.Fatalf("%d graph launches, %d captured ops, %d others; want 1, 2, 1: %+v", launches, captured, plain, im.Events)
	}
}
