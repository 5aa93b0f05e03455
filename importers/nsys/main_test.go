package nsys_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when any of them leaves a goroutine running (the survey reads
// tables on goroutines of its own).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
