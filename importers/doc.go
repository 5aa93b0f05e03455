// Package importers opens every input xfertop reads through one interface: it tells a file's
// format by its content, not its name (an xfertop recording, a PyTorch profiler or Chrome trace in
// JSON, plain or gzipped, an Nsight Systems SQLite export, or NCCL Inspector's logs and Prometheus
// dumps, a file or their directory), and Stream hands its description and
// its events, batch by batch, to a Sink, reporting progress as it goes. A recording is read chunk by
// chunk through package recordings; traces and exports through the importer of their format
// (packages kineto, nsys, inspector and ras). An Nsight Systems report (.nsys-rep) is refused with the command
// that exports it. The Chrome exporter, the way back, is package chrome. The per-rank recordings of
// one job are merged through package join, as a live attach merges its ranks.
//
// The importers of other tools' formats live under this directory, one package per format
// (kineto, nsys, inspector, ras, chrome) with the helpers they share (reorder; nsys's pagescan and nsystest). They
// sit above recordings (xfertop's own format) and join, and import neither attach nor anything
// above them.
package importers
