package flightrecorder

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// realJob holds what a real PyTorch job wrote on a GPU (importers/testdata/realjob/…/README.md):
// per step, each rank's Flight Recorder dumps (fr/, pickle and JSON) and what it issued.
const realJob = "../testdata/realjob/h200-torch2.11-nccl2.28.9"

// realOp is an op as both the dumps and the job's issued lists can say it: kind, op, bytes, peer.
type realOp struct {
	kind, op string
	bytes    int64
	peer     int32
}

// issuedOps reads one rank's list of what torch_job.py issued, in the dump's terms: all_to_all_single
// is the collective all_to_all of the whole buffer (torch records the call, not NCCL's sends).
func issuedOps(t *testing.T, path string) []realOp {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var l struct {
		Ops []struct {
			Op    string `json:"op"`
			Bytes int64  `json:"bytes"`
			Peer  *int32 `json:"peer"`
		} `json:"ops"`
	}
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []realOp
	for _, o := range l.Ops {
		switch o.Op {
		case "send", "recv":
			out = append(out, realOp{o.Op, "", o.Bytes, *o.Peer})
		case "all_to_all_single":
			out = append(out, realOp{"collective", "all_to_all", o.Bytes, timeline.NoDevice})
		default:
			out = append(out, realOp{"collective", o.Op, o.Bytes, timeline.NoDevice})
		}
	}
	return out
}

// seenEvent is an event with its label as a string, to compare imports with their own tables.
type seenEvent struct {
	ev    timeline.Event
	label string
}

func seen(t *testing.T, paths []string) ([]seenEvent, []string) {
	t.Helper()
	im, err := ReadFiles(paths, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]seenEvent, len(im.Events))
	for i, e := range im.Events {
		l := im.Strings.Lookup(e.Label)
		e.Label = 0
		out[i] = seenEvent{e, l}
	}
	return out, im.Warnings
}

// TestRealJobDumps reads the Flight Recorder dumps of a real job (torch 2.11, NCCL 2.28.9, one rank
// and two): the pickle and the JSON dump of each rank give the same events; each rank's ops are
// what it issued (12 calls an iteration, 3 iterations: 36), with each batch_isend_irecv's end
// marker left out (3 a rank; 39 entries); nothing is left pending and the diagnosis finds nothing
// in this healthy job. torch leaves a coalesced group's sends and receives "scheduled" for good and
// completes only the group's marker: they take the marker's state.
func TestRealJobDumps(t *testing.T) {
	for _, c := range []struct {
		step  string
		ranks int
	}{{"torch", 1}, {"torch2", 2}} {
		t.Run(c.step, func(t *testing.T) {
			var pickles, jsons []string
			for r := range c.ranks {
				p := filepath.Join(realJob, c.step, "fr", fmt.Sprintf("nccl_trace_rank_%d", r))
				pickles, jsons = append(pickles, p), append(jsons, p+".json")
			}
			fromPickle, warns := seen(t, pickles)
			fromJSON, _ := seen(t, jsons)
			if !slices.Equal(fromPickle, fromJSON) {
				t.Errorf("the pickle and the JSON dumps differ:\npickle %v\nJSON   %v", fromPickle, fromJSON)
			}
			want := fmt.Sprintf("%d coalesced-group end markers left out", 3*c.ranks)
			if !slices.ContainsFunc(warns, func(w string) bool { return strings.Contains(w, want) }) {
				t.Errorf("warnings %q; want %q", warns, want)
			}
			for r := range c.ranks {
				var got []realOp
				for _, s := range fromPickle {
					e := s.ev
					if e.Device != int32(r) || e.Kind == timeline.KindMark {
						continue
					}
					if e.Status == timeline.StatusPending {
						t.Errorf("rank %d: %q left pending in a job that completed it", r, s.label)
					}
					switch e.Kind {
					case timeline.KindSend, timeline.KindRecv:
						got = append(got, realOp{e.Kind.String(), "", e.Bytes, e.Peer})
					default:
						got = append(got, realOp{"collective", e.OpName(), e.Bytes, e.Peer})
					}
				}
				issued := issuedOps(t, filepath.Join(realJob, c.step, fmt.Sprintf("issued-job-rank%d.json", r)))
				if len(got) != 36 || len(issued) != 36 {
					t.Errorf("rank %d: %d ops imported, %d issued; want 36 each", r, len(got), len(issued))
				}
				less := func(a, b realOp) int {
					return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
				}
				slices.SortFunc(got, less)
				slices.SortFunc(issued, less)
				if !slices.Equal(got, issued) {
					t.Errorf("rank %d: imported\n%v\nissued\n%v", r, got, issued)
				}
			}
			if f := verdicts(t, pickles...); len(f) != 0 {
				t.Errorf("%d findings in a healthy job; first: %+v", len(f), f[0])
			}
		})
	}
}

// TestRealJobUnknownTimes: the real job's entries its watchdog had not retired carry no time of
// their own (their discovered times were the dump's, left out) and, on one rank, no duration_ms
// either: they are marked timeline.AuxTimeUnknown, never imported as ops of 0 s. Every op of the
// one-rank job is such (none retired, no timing on it); of the two-rank job, the entries after
// the watchdog's last poll: of 18 entries a rank not retired, 11 collectives, the last
// batch_isend_irecv's send and receive (they take the times of its end marker, not retired) and
// none of the earlier groups' sends and receives (torch never retires them, but their markers were
// retired, with duration_ms): 13.
func TestRealJobUnknownTimes(t *testing.T) {
	for _, c := range []struct {
		step    string
		ranks   int
		unknown int // per rank
	}{{"torch", 1, 36}, {"torch2", 2, 13}} {
		t.Run(c.step, func(t *testing.T) {
			var paths []string
			for r := range c.ranks {
				paths = append(paths, filepath.Join(realJob, c.step, "fr", fmt.Sprintf("nccl_trace_rank_%d", r)))
			}
			evs, warns := seen(t, paths)
			unknown := make([]int, c.ranks)
			for _, s := range evs {
				e := s.ev
				if !e.Kind.IsBusy() {
					continue
				}
				if e.TimeUnknown() {
					unknown[e.Device]++
					if e.End != e.Start {
						t.Errorf("rank %d: %q of unknown time lasts %d ns", e.Device, s.label, e.Dur())
					}
				} else if e.Dur() <= 0 {
					t.Errorf("rank %d: %q imported as an op of %d ns with its time known", e.Device, s.label, e.Dur())
				}
			}
			for r, n := range unknown {
				if n != c.unknown {
					t.Errorf("rank %d: %d ops of unknown time; want %d", r, n, c.unknown)
				}
			}
			if !slices.ContainsFunc(warns, func(w string) bool { return strings.Contains(w, "else its time is unknown") }) {
				t.Errorf("warnings %q; want the line on entries not retired", warns)
			}
		})
	}
}
