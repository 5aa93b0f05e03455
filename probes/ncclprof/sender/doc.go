// Package sender is the Go half of the NCCL profiler plugin: it reads the plugin's configuration
// from the environment, folds the records the C callbacks queue (package fold) into timeline
// events, and delivers them in the recording format to a listening `xfertop attach` (over a Unix
// socket, or TCP when asked) and/or to a per-rank .xfr recording. It runs on one goroutine of the
// job's process and never makes NCCL's threads wait: when it falls behind, the ring drops and counts.
package sender
