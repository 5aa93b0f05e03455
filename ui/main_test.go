package ui

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when any of them leaves a goroutine running (the replays
// some of them start included).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
