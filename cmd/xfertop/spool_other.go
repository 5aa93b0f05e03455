//go:build !unix

package main

// freeBytes is not known here: the pipe is bounded by maxSpoolBytes alone.
func freeBytes(string) (int64, bool) { return 0, false }
