//go:build cuda

package cuda_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every run's host threads, the goroutine closing their channel and the poller end with the run,
// however it ends (a watchdog, an NCCL fault, a failed init).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
