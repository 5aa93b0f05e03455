//go:build !cgo

package main

// Without cgo there is no plugin to build: the package only says so.
const needsCgo = "the NCCL profiler plugin is C-callable and needs cgo (CGO_ENABLED=1 and a C compiler)"
