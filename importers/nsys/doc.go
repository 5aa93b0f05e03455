// Package nsys imports the SQLite export of an Nsight Systems capture (`nsys export --type sqlite
// FILE.nsys-rep`) as xfertop events: kernels (NCCL kernels as collectives), copies and memsets,
// runtime calls (whose start is each GPU op's launch time, by correlation id), stream waits on
// events, and NVTX ranges (steps and marks). Several files are several ranks or hosts, put on one
// time axis by each capture's wall-clock start.
//
// The importer only turns rows into timeline events: every number of a report is made by package
// analysis from those events, as for any other source. Columns are looked up by name (as PRAGMA
// table_info lists them), and kinds by their names in the ENUM tables, so exports of different Nsight Systems
// versions are read alike (the tests read the tables of 2024 and 2026 exports): a column a version
// lacks is taken as unknown; a table or column xfertop needs that is missing is an error naming it.
//
// Stream hands the events on in start order without holding them: a survey reads each table once
// for what must be known before the first event (the devices, whether two starts lie more than 24 h
// apart, and how far the table's rows are out of start order), reading its columns straight from
// the table's b-tree pages (package pagescan), several tables at a time, and a table whose pages it
// does not read with SQL; only when two starts lie more than 24 h apart does a second pass read them
// again for the median start of the outlier test. Then each table is read straight, or through a
// reorder buffer as large as the survey found its rows need (at most 16,384 rows), from its pages
// when the survey read them (the survey checked every column the events need, so this reading
// cannot meet what the pages do not hold), or sorted by SQLite when its rows are further out of
// order (SQLite spills to temporary files); the tables of every file are merged by start. A file
// mapped into memory (below) has its rows read from its pages once: the survey keeps them, compact,
// within the file's size, and the events are made from them. Names are looked up in StringIds as
// they are met, through bounded caches, and launch times are kept in a ring per process (or, for a
// process whose calls the survey counted, a table by hash as small as its calls), so memory follows
// the files, processes and distinct names, not the rows.
//
// The schema (sqlite_master's CREATE TABLE statements, read as pragma_table_xinfo lists their
// columns), the session's start, the ENUM, GPU and device tables and the names in StringIds are read
// from the pages too, so that SQLite, whose opening and statements cost a small export more than
// its rows, is opened only for a read the pages cannot serve (each such read falls back to SQL,
// which then reads it or names what is wrong). A file of at most 16 MiB is mapped into memory once
// for every reader of its pages; a larger one is read by each reader through a cache of its own.
//
// Files are opened read-only and immutable (SQLite takes no lock and writes nothing), with a pure-Go
// SQLite (github.com/ncruces/go-sqlite3), so the default build needs no cgo.
package nsys
