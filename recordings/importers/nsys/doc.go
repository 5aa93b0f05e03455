// Package nsys imports the SQLite export of an Nsight Systems capture (`nsys export --type sqlite
// FILE.nsys-rep`) as xfertop events: kernels (NCCL kernels as collectives), copies and memsets,
// runtime calls (whose start is each GPU op's launch time, by correlation id), stream waits on
// events, and NVTX ranges (steps and marks). Several files are several ranks or hosts, put on one
// time axis by each capture's wall-clock start.
//
// The importer only turns rows into timeline events: every number of a report is made by package
// analysis from those events, as for any other source. Columns are looked up by name, so exports of
// different Nsight Systems versions are read alike (the tests read 2026.1 and 2026.2 exports and
// one with an older version's columns): a column a version lacks is taken as unknown; a table or
// column xfertop needs that is missing is an error naming it.
//
// Files are opened read-only and immutable (SQLite takes no lock and writes nothing), with a pure-Go
// SQLite (github.com/ncruces/go-sqlite3), so the default build needs no cgo.
package nsys
