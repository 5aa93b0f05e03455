//go:build !unix

package recordings_test

import "time"

// processCPU is not measured on this system: the events/cpu-s metric is then left out.
func processCPU() time.Duration { return 0 }
