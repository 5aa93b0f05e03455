package nsys_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when any of them leaves a goroutine running (the survey reads
// tables on goroutines of its own). Run with XFERTOP_NSYS_TOTALS set, the binary is
// BenchmarkVsSQLite3's import process instead.
func TestMain(m *testing.M) {
	if p := os.Getenv(totalsEnv); p != "" {
		if err := printTotals(p); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}
