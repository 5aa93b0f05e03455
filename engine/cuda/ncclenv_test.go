//go:build cuda

package cuda_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/timeline"
)

// The nccl_algo and nccl_proto knobs reach NCCL as NCCL_ALGO and NCCL_PROTO, set before the
// first communicator is created (NCCL reads them then); left at auto, the environment the user
// gave stands. The fake NCCL logs what it sees at each ncclCommInitRank.
func TestNCCLAlgoProtoEnvironment(t *testing.T) {
	needFake(t)
	tests := []struct {
		name        string
		algo        timeline.NCCLAlgo
		proto       timeline.NCCLProto
		userAlgo    string // the environment before the run; "" is unset
		wantInitEnv string
	}{
		{"forced", timeline.AlgoRing, timeline.ProtoLL128, "", "NCCL_ALGO=Ring NCCL_PROTO=LL128"},
		{"forced over the user's", timeline.AlgoTree, 0, "NVLS", "NCCL_ALGO=Tree NCCL_PROTO=-"},
		{"auto keeps the user's", 0, 0, "NVLS", "NCCL_ALGO=NVLS NCCL_PROTO=-"},
		{"auto", 0, 0, "", "NCCL_ALGO=- NCCL_PROTO=-"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// t.Setenv restores both variables after the test, whatever the backend set.
			t.Setenv("NCCL_ALGO", tc.userAlgo)
			t.Setenv("NCCL_PROTO", "")
			os.Unsetenv("NCCL_PROTO")
			if tc.userAlgo == "" {
				os.Unsetenv("NCCL_ALGO")
			}
			log := filepath.Join(t.TempDir(), "nccl.log")
			t.Setenv("XFER_FAKE_NCCL_LOG", log)
			opts := engine.DefaultOptions()
			opts.NCCLAlgo, opts.NCCLProto = tc.algo, tc.proto
			r := newRig(t, 2, 2, opts)
			if _, err := r.c.Collective(timeline.CollAllReduce, []engine.DeviceID{0, 1}, 1<<12, "ar"); err != nil {
				t.Fatal(err)
			}
			r.run(t)
			l := readLog(t, log)
			if n := strings.Count(l, "init comm="); n != 2 || strings.Count(l, tc.wantInitEnv) != 2 {
				t.Errorf("NCCL log:\n%s\nwant 2 inits, each seeing %s", l, tc.wantInitEnv)
			}
		})
	}
}
