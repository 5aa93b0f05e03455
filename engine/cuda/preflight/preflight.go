//go:build cuda

package preflight

/*
#cgo LDFLAGS: -lcuda
#include <cuda.h>

static const char *xferErrName(CUresult r) {
	const char *s = 0;
	if (cuGetErrorName(r, &s) != CUDA_SUCCESS || s == 0) return "unknown CUDA error";
	return s;
}
*/
import "C"

import (
	"fmt"
	"os"
)

// problem says why the CUDA driver cannot start, or "" when it can.
func problem() string {
	r := C.cuInit(0)
	if r == C.CUDA_SUCCESS {
		var n C.int
		if r = C.cuDeviceGetCount(&n); r == C.CUDA_SUCCESS {
			if n > 0 {
				return ""
			}
			return "cuInit succeeded but the driver reports no CUDA devices"
		}
	}
	return fmt.Sprintf("cuInit failed: %s (%d)", C.GoString(C.xferErrName(r)), int(r))
}

func init() {
	why := problem()
	if why == "" {
		return
	}
	if isTestBinary(os.Args[0]) {
		// gorgonia.org/cu would end this binary next; leave with the reason instead, as a skip.
		fmt.Printf("--- SKIP: GPU tests: no usable CUDA device (%s)\n", why)
		os.Exit(0)
	}
	fmt.Fprintf(os.Stderr, "xfertop: this binary was built with -tags cuda and needs an NVIDIA GPU and driver: %s\n"+
		"xfertop: build without -tags cuda (go build ./cmd/xfertop) to run the simulator on this machine\n", why)
	os.Exit(1)
}

// isTestBinary tells a `go test` binary by its name. Written out rather than with strings.HasSuffix
// so the package imports nothing beyond what gorgonia.org/cu imports (see doc.go).
func isTestBinary(arg0 string) bool {
	const suffix = ".test"
	return len(arg0) >= len(suffix) && arg0[len(arg0)-len(suffix):] == suffix
}
