// Package transfers is the console's table of transfers and collectives by kind and size class:
// count, bytes, latency, GB/s, busbw and NCCL's algorithm and protocol; sortable and filterable.
package transfers
