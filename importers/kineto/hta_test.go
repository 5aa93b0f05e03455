package kineto

import (
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// htaNotCompute is Holistic Trace Analysis's pattern of kernels that are not computation
// (hta/common/types.py, ComputeKernelGroupingPattern, matched inversely).
var htaNotCompute = regexp.MustCompile(`(^nccl)|(.*Memcpy)|(.*Memset)|(.*dma)|(^.*Sync)|(^Stream Wait Event)|(cuda.*LaunchKernel)|(^runFunction)|(^hip)|(^job_exe)|(^packet)|(^pe_exe)|(^cpum_exe_subgraph)|(^hccl)|(^collective_subgraph_execution)`)

// htaOverlap computes, for one device, the communication/computation overlap as HTA's
// get_comm_comp_overlap does: |union(compute) ∩ union(comm)| / |union(comm)|, in percent rounded
// to two decimals. It is written here from HTA's definition, apart from xfertop's analyses, to check
// the selection --like-hta makes.
func htaOverlap(im *Imported, dev int32) float64 {
	var comm, comp [][2]int64
	for _, e := range im.Events {
		if e.Device != dev {
			continue
		}
		switch {
		case e.Kind == timeline.KindCollective:
			comm = append(comm, [2]int64{e.Start, e.End})
		case e.Kind == timeline.KindKernel && !htaNotCompute.MatchString(im.Strings.Lookup(e.Label)):
			comp = append(comp, [2]int64{e.Start, e.End})
		}
	}
	merge := func(iv [][2]int64) [][2]int64 {
		sort.Slice(iv, func(i, j int) bool { return iv[i][0] < iv[j][0] })
		var out [][2]int64
		for _, x := range iv {
			if n := len(out); n > 0 && x[0] <= out[n-1][1] {
				out[n-1][1] = max(out[n-1][1], x[1])
				continue
			}
			out = append(out, x)
		}
		return out
	}
	comm, comp = merge(comm), merge(comp)
	var total, both int64
	j := 0
	for _, c := range comm {
		total += c[1] - c[0]
		for j > 0 && comp[j-1][1] > c[0] {
			j--
		}
		for ; j < len(comp) && comp[j][0] < c[1]; j++ {
			if lo, hi := max(c[0], comp[j][0]), min(c[1], comp[j][1]); hi > lo {
				both += hi - lo
			}
		}
	}
	return math.Round(10000*float64(both)/float64(total)) / 100
}

// The two sampled ranks of HTA's own test data: per rank overlap over all ops, and over the ops
// HTA selects by default, as HTA reports them (14.95% and 19.93%; 11.81% and 20.05%).
func TestSampledRanksOverlapLikeHTA(t *testing.T) {
	paths := []string{needData(t, "sampled_rank-0.json.gz"), needData(t, "sampled_rank-1.json.gz")}
	for _, tc := range []struct {
		like bool
		want [2]float64
	}{{false, [2]float64{14.95, 19.93}}, {true, [2]float64{11.81, 20.05}}} {
		im, err := ReadFiles(paths, Options{LikeHTA: tc.like})
		if err != nil {
			t.Fatal(err)
		}
		if got := [2]float64{htaOverlap(im, 0), htaOverlap(im, 1)}; got != tc.want {
			t.Errorf("like-hta %v: overlap per rank %v%%; HTA says %v%%", tc.like, got, tc.want)
		}
	}
}

// kineto builds a PyTorch profiler trace: ProfilerStep annotations "name@ts+dur", and for each
// launch "corr@ts" a cudaLaunchKernel at ts and its kernel 5 µs later.
func kineto(steps []string, launches []string) string {
	var evs []string
	for _, s := range steps {
		name, times, _ := strings.Cut(s, "@")
		ts, dur, _ := strings.Cut(times, "+")
		evs = append(evs, `{"ph":"X","cat":"user_annotation","name":"`+name+`","pid":1,"tid":1,"ts":`+ts+`,"dur":`+dur+`}`)
	}
	for _, l := range launches {
		corr, ts, _ := strings.Cut(l, "@")
		n, _ := strconv.Atoi(ts)
		kts := strconv.Itoa(n + 5)
		evs = append(evs, `{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":`+ts+`,"dur":2,"args":{"correlation":`+corr+`}}`,
			`{"ph":"X","cat":"kernel","name":"k`+corr+`","pid":0,"tid":7,"ts":`+kts+`,"dur":3,"args":{"device":0,"stream":7,"correlation":`+corr+`}}`)
	}
	return `{"traceEvents":[` + strings.Join(evs, ",") + `]}`
}

// kept lists the kernels, runtime calls and steps an import kept, by name.
func kept(im *Imported) (kernels []string, runtime, steps int) {
	for _, e := range im.Events {
		switch e.Kind {
		case timeline.KindKernel:
			kernels = append(kernels, im.Strings.Lookup(e.Label))
		case timeline.KindRuntime:
			runtime++
		case timeline.KindStep:
			steps++
		}
	}
	sort.Strings(kernels)
	return kernels, runtime, steps
}

// --like-hta selects what HTA's _filter_irrelevant_gpu_kernels keeps: everything when the trace
// names fewer than two steps; otherwise the CPU ops that start before the last step does (inside a
// step or not) and the GPU ops they launched.
func TestLikeHTASelection(t *testing.T) {
	launches := []string{"1@50", "2@150", "3@250", "4@350"}
	tests := []struct {
		name            string
		steps           []string
		kernels         string
		runtime, nsteps int
		devices         int
	}{
		{"no step", nil, "k1 k2 k3 k4", 4, 0, 1},
		{"one step", []string{"ProfilerStep#1@100+100"}, "k1 k2 k3 k4", 4, 1, 1},
		{"two steps", []string{"ProfilerStep#1@100+100", "ProfilerStep#2@200+100"}, "k1 k2", 2, 1, 1},
		{"two steps apart", []string{"ProfilerStep#1@100+10", "ProfilerStep#2@300+10"}, "k1 k2 k3", 3, 1, 1},
		{"one step named twice", []string{"ProfilerStep#1@100+100", "ProfilerStep#1@200+100"}, "k1 k2 k3 k4", 4, 2, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			im, err := Import("t.json", strings.NewReader(kineto(tc.steps, launches)), Options{LikeHTA: true})
			if err != nil {
				t.Fatal(err)
			}
			k, rt, st := kept(im)
			if strings.Join(k, " ") != tc.kernels || rt != tc.runtime || st != tc.nsteps || im.Devices != tc.devices {
				t.Errorf("kept kernels %v, %d runtime calls, %d steps, %d devices; want %s, %d, %d, %d",
					k, rt, st, im.Devices, tc.kernels, tc.runtime, tc.nsteps, tc.devices)
			}
		})
	}
}

// --like-hta rounds ns-precision timestamps to whole µs as HTA does: the start up, the end down (a
// slice shorter than that becomes empty). Without it, ns are kept exactly.
func TestLikeHTARounding(t *testing.T) {
	src := `{"traceEvents":[` +
		`{"ph":"X","cat":"kernel","name":"a","ts":1000.4,"dur":1.2,"args":{"device":0,"stream":7}},` +
		`{"ph":"X","cat":"kernel","name":"b","ts":1002.6,"dur":3.0,"args":{"device":0,"stream":7}},` +
		`{"ph":"X","cat":"kernel","name":"c","ts":1009,"dur":2,"args":{"device":0,"stream":7}}]}`
	for _, tc := range []struct {
		like bool
		want string
	}{
		{false, "a [0 1200] b [2200 5200] c [8600 10600]"},
		{true, "a [0 0] b [2000 4000] c [8000 10000]"},
	} {
		im, err := Import("r.json", strings.NewReader(src), Options{LikeHTA: tc.like})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range im.Events {
			got = append(got, im.Strings.Lookup(e.Label)+" ["+strconv.FormatInt(e.Start, 10)+" "+strconv.FormatInt(e.End, 10)+"]")
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("like-hta %v: %s; want %s", tc.like, strings.Join(got, " "), tc.want)
		}
	}
}
