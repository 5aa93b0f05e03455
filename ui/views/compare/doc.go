// Package compare is the console's view of two runs side by side: each figure of report.Compare
// (step time, GB/s per kind, idle by cause, overlap, busbw per collective) in A and B with the
// difference, its sign and whether it is better, read from the same rows `xfertop compare --json`
// prints; and under it both runs' timelines, A above B, each device a strip, aligned at the start
// of a chosen step on one time scale, so a shorter step is a shorter strip.
package compare
