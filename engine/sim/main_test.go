package sim_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The simulator starts no goroutine: a paced run waits on timers in its own goroutine, and a
// cancelled one leaves nothing behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
