package engine

import (
	"strings"
	"testing"
)

func TestFit(t *testing.T) {
	if _, err := NewFit(16, 1, false); err == nil || !strings.Contains(err.Error(), "needs 16 GPUs and this machine has 1: choose a smaller --topology, or pass --fit") {
		t.Errorf("16 ranks on 1 GPU without --fit: %v", err)
	}
	if _, err := NewFit(4, 0, true); err == nil {
		t.Error("no GPU at all must be an error")
	}
	f, err := NewFit(16, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	if f.GPU(9) != 0 || !f.Shared(3, 12) || f.Distinct([]DeviceID{0, 4, 8, 12}) != 1 {
		t.Errorf("fit %+v: GPU(9)=%d", f, f.GPU(9))
	}
	f2, _ := NewFit(8, 3, true)
	if f2.GPU(7) != 1 || f2.Distinct([]DeviceID{0, 1, 2, 3}) != 3 {
		t.Errorf("8 on 3: GPU(7)=%d", f2.GPU(7))
	}
	if got := f2.String(); got != "8 ranks on 3 GPUs (--fit): GPU 0: ranks 0,3,6; GPU 1: ranks 1,4,7; GPU 2: ranks 2,5" {
		t.Errorf("String = %q", got)
	}
	if got, _ := NewFit(2, 8, false); got.String() != "2 ranks on 8 GPUs, one each" {
		t.Errorf("String = %q", got.String())
	}
}
