// Package importers opens what xfertop reads besides its own runs: it tells a file's format by its
// content, not its name (an xfertop recording, a PyTorch profiler or Chrome trace in JSON, plain or
// gzipped, or an Nsight Systems SQLite export), and imports traces and exports as events through
// the importer of their format, reporting progress as it goes. An Nsight Systems report
// (.nsys-rep) is refused with the command that exports it.
package importers
