// Package pagescan reads the integer columns of an SQLite table straight from the b-tree pages of
// its file, in the order a full scan of the table visits them (by rowid), without running SQL.
//
// The Nsight Systems importer's survey reads every row of an export once, a few integer columns of
// each, before its first event: through SQLite, each row costs a statement step and a call per
// column; read from the pages, it costs decoding a few varints. It is meant for files nothing
// writes (an export is never written again), and reads only what it is sure of: a table whose
// needed columns hold anything but integers and NULLs, whose records spill the needed columns to
// overflow pages, or whose pages do not parse, is refused with an error (ErrUnsupported or a
// *CorruptError naming the page), and the caller reads that table with SQL instead. It reads pages
// with ReadAt through a small cache of blocks, so memory is bounded whatever the size of the file,
// and it visits each page of the file at most once, so time is bounded on a damaged file too.
//
// The file format: https://sqlite.org/fileformat2.html (the database header, b-tree pages, cells,
// the record format, varints).
package pagescan
