// Package recordings reads and writes xfertop's .xfr recordings: an append-only, crash-safe file of
// checksummed chunks (session metadata, the string table, blocks of delta-coded events compressed
// with zstd one chunk at a time, drop counts, the outcome, and a seek index), specified byte by byte
// in docs/recording-format.md.
//
// Writer encodes chunks; Recorder is a timeline.Sink that records a live session from a bounded
// queue without ever blocking the producer; Reader reads any prefix of a file, reports a torn tail as
// a warning and damage as a *CorruptionError, and with salvage skips damaged chunks; Repair cuts a
// damaged file back to its last sound chunk.
//
// It holds xfertop's own format alone: the importers of other tools' formats are package importers
// and the packages under it, which read recordings through this package, never the other way.
package recordings
