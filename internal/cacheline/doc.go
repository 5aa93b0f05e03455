// Package cacheline asks the CPU for memory ahead of its use. The simulator reads a step's queued
// commands and op slots long after writing them, and the analysis folds each event into
// per-stream and per-device state that, on a cluster of a thousand GPUs, is rarely in the caches
// when the event comes: asking for it at the start of an event lets the misses overlap with each
// other and with the work in between, rather than come one after another.
package cacheline
