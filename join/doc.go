// Package join makes one session's event stream of the many sources of one job: the ranks of a
// training job, live (package attach's server, one connection per rank) or recorded (the per-rank
// recordings MergeRecordings reads, in start order, with memory bounded by one block per file).
// Join is the one place where that happens: each rank's clock is placed on its wall clock, its
// labels are interned in the session's table, streams and groups are renumbered (StreamsPerRank),
// hosts are indexed, peers and roots are translated from communicator ranks to job ranks, two
// processes claiming one rank are refused (RankConflictError), losses are counted, and posting
// marks (PostedLabel) become collectives in flight and hang alerts.
//
// It sits below every user of it (attach, the importers, the NCCL profiler plugin's folder, the
// command) and imports only recordings and timeline, so no import runs back up: a test walks the
// module's imports and fails if one does (TestNoImportRunsBackUp).
package join
