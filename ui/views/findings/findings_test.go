package findings

import (
	"testing"

	"github.com/xfertop/xfertop/analysis/diagnosis"
)

// Enter on a finding shows its culprit: the rank's device from onset to finding, a link placed
// only by its host on that host's first GPU, nothing for a finding that names no place.
func TestJump(t *testing.T) {
	for _, c := range []struct {
		f      diagnosis.Finding
		dev    int32
		ok     bool
		t, dur int64
	}{
		{f: diagnosis.Finding{Kind: diagnosis.SlowGPU, Rank: 19, Host: 2, Onset: 1e9, At: 1.3e9}, dev: 19, ok: true, t: 1e9, dur: 0.3e9},
		{f: diagnosis.Finding{Kind: diagnosis.SlowLink, Rank: -1, Host: 3, Onset: 5e8, At: 5e8}, dev: 24, ok: true, t: 5e8, dur: 1e6},
		{f: diagnosis.Finding{Kind: diagnosis.SlowLink, Rank: -1, Host: -1}, ok: false},
	} {
		j, ok := Jump(&c.f, 8)
		if ok != c.ok || (ok && (j.Device != c.dev || j.Time != c.t || j.Dur != c.dur || j.Stream != 0)) {
			t.Errorf("%+v: jump %+v %v; want device %d at %d for %d (%v)", c.f, j, ok, c.dev, c.t, c.dur, c.ok)
		}
	}
}
