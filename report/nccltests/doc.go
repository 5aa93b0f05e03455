// Package nccltests reads and writes the text tables of NVIDIA's nccl-tests (all_reduce_perf,
// all_gather_perf, reduce_scatter_perf, alltoall_perf, broadcast_perf, sendrecv_perf), so that a
// simulated sweep can be laid beside a real log and a real log compared with a simulated sweep.
//
// A table is the '#' header nccl-tests prints (nThread, nGpus, minBytes, maxBytes, the ranks and
// their devices, the column names), one row per size with the out-of-place and in-place time (µs),
// algorithm bandwidth and bus bandwidth (GB/s) and wrong-value count, and the "# Avg bus
// bandwidth" line. Parse reads such a log, tolerating the lines nccl-tests' environment mixes in
// (NCCL_DEBUG output, an MPI launcher's "[1,0]<stdout>:" prefixes); Write prints a table in the
// same columns and widths; FromReport builds one from a report's analysis rows, computing nothing
// (the analysis layer made every number); Compare prints a log against a simulation, size by size.
package nccltests
