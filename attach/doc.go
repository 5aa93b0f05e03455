// Package attach is the console's end of the NCCL profiler plugin: it listens for a training job's
// ranks (a Unix socket private to the user, or TCP when asked), reads each rank's stream in the
// recording format, and merges them into one session's event stream for the usual consumers (the
// console's window, an analysis.Analyzer for the headless report, a recorder). The merge is package
// join's, the one a replay of the ranks' recordings uses too: each process's clock aligned on its
// wall clock, streams, groups and labels renumbered, hosts indexed, communicator ranks translated to
// job ranks. A collective posted by some of its ranks and not the others is those ranks' wait for
// their peers (in flight while the job runs, and handed to the sinks when the session ends with it
// still open): the diagnosis (analysis/diagnosis) names the hang from them, by op, sequence number
// and the ranks that never entered it, as it does the engine's. attach makes no verdict of its own.
package attach
