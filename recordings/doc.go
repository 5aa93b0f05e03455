// Package recordings reads and writes xfertop's .xfr recordings: an append-only, crash-safe file of
// checksummed chunks (session metadata, the string table, blocks of delta-coded events, drop counts,
// the outcome, and a seek index), specified byte by byte in docs/recording-format.md.
//
// Writer encodes chunks; Recorder is a timeline.Sink that records a live session from a bounded
// queue without ever blocking the producer; Reader reads any prefix of a file, reports a torn tail as
// a warning and damage as a *CorruptionError, and with salvage skips damaged chunks.
package recordings
