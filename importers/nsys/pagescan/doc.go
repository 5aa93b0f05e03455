// Package pagescan reads the integer and text columns of an SQLite table straight from the b-tree
// pages of its file, in the order a full scan of the table visits them (by rowid), without running
// SQL: a Cursor (Next, Row, Err) or Scan with a function per row.
//
// The Nsight Systems importer reads every row of an export twice, the columns of its events: once
// in its survey, before its first event, and once to make the events. Through SQLite, each row
// costs a statement step and a call per column (in a pure-Go SQLite, a virtual machine whose every
// memory access is checked); read from the pages, it costs decoding a few varints. It is meant for
// files nothing writes (an export is never written again), and reads only what it is sure of: a
// table whose needed columns hold anything but what was asked (integers and NULLs, or texts in
// UTF-8 and NULLs), whose records spill a needed column to overflow pages (unless the Cursor reads
// them: Overflow, for records of up to 16 MiB), or whose pages do not parse, is refused with an
// error (ErrUnsupported or a *CorruptError naming the page), and the caller reads that table with
// SQL instead. Free pages, indexes and other tables' pages are never visited; Find reads one row by
// its rowid, MaxRowid the largest rowid. A Source is a file opened once for the Files that read it
// side by side: a file no larger than its opener allows is mapped into memory once (or read) for
// all of them, a larger one read by each File with ReadAt through a small cache of blocks (kept for
// the next File when one is closed), so memory is bounded whatever the size of the file; a scan
// visits each page of the file at most once, so time is bounded on a damaged file too.
//
// The file format: https://sqlite.org/fileformat2.html (the database header, b-tree pages, cells,
// the record format, varints).
package pagescan
