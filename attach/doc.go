// Package attach is the console's end of the NCCL profiler plugin: it listens for a training job's
// ranks (a Unix socket private to the user, or TCP when asked), reads each rank's stream in the
// recording format, and merges them into one session's event stream for the usual consumers (the
// console's window, an analysis.Analyzer for the headless report, a recorder). The merge is package
// join's, the one a replay of the ranks' recordings uses too: each process's clock aligned on its
// wall clock, streams, groups and labels renumbered, hosts indexed, communicator ranks translated to
// job ranks. It also watches for hangs, through the join: a collective posted by some of its ranks
// and not the others for longer than a timeout becomes an alert naming the op, its sequence number
// and the missing ranks.
package attach
