//go:build !linux

package main

// threadCPU is not measured off Linux.
func threadCPU() int64 { return 0 }
