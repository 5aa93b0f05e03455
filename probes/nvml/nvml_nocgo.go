//go:build !cgo

package nvml

import "fmt"

// Supported reports whether this build can load NVML at all (go-nvml needs cgo).
const Supported = false

// Library stands in for the NVML reader in builds without cgo: go-nvml loads
// libnvidia-ml through cgo, so such a build cannot read telemetry and says so once.
type Library struct{ path string }

// NewLibrary returns a Reader whose Init explains that NVML needs a cgo build.
func NewLibrary(path string) *Library { return &Library{path: libraryPath(path)} }

// Init always fails: NVML is loaded through cgo, which this build lacks.
func (l *Library) Init() error {
	return fmt.Errorf("NVML (%s) needs a build with cgo enabled (this binary was built with CGO_ENABLED=0)", l.path)
}

// Count returns zero devices.
func (l *Library) Count() (int, error) { return 0, nil }

// Sample is never reached because Init fails.
func (l *Library) Sample(int) (Sample, error) {
	return Sample{}, fmt.Errorf("NVML unavailable without cgo")
}

// Shutdown does nothing.
func (l *Library) Shutdown() {}
