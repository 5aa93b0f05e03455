// Package analysis is the one place xfertop computes a number. Each metric is a streaming
// accumulator: a pure fold over timeline events (Add) with bounded state and a result type, tested
// on hand-built event sequences. An Analyzer runs them all.
//
// The headless report is an Analyzer run over the whole stream; the console runs the same Analyzer
// as events arrive and reads its Result on each frame; so the two agree by construction, and memory
// does not grow with the length of a run. Views and reports format results; they never compute.
//
// Definitions follow the tools users know: nccl-tests for algbw and busbw, Holistic Trace Analysis
// for idle time, the temporal breakdown and communication/computation overlap (see docs/report.md).
package analysis
