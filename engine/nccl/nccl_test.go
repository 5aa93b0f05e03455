//go:build cgo

package nccl

import (
	"errors"
	"strings"
	"testing"
)

// Without NCCL, loading it fails with an error that names what was looked for.
func TestLoadNCCLMissing(t *testing.T) {
	_, err := LoadNCCL("/nonexistent/libnccl.so.2")
	if !errors.Is(err, ErrNCCL) || !strings.Contains(err.Error(), "could not load /nonexistent/libnccl.so.2 (set XFER_NCCL_LIB") {
		t.Errorf("err = %v", err)
	}
}
