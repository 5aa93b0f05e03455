// Package inspector reads what NCCL Inspector (NVIDIA/nccl's profiler plugin under
// ext-profiler/inspector, later plugins/profiler/inspector) writes: its JSON-lines logs
// (<host>-pid<pid>.log, one per process, plain or gzipped, or the directory holding a job's) and
// its Prometheus textfile dumps (nccl_inspector_metrics_<gpu>.prom).
//
// Every collective record becomes a KindCollective event and every point-to-point record a send or
// a receive, per rank: the device is the process's rank in the widest communicator it reports on
// (the job's world communicator, when it has one), the stream one per communicator, Bytes
// Inspector's message size, Aux its algorithm and protocol (timeline.PackNCCL; the channel count
// from its verbose kernel events). A record's time is its first kernel's start when the log is
// verbose (NCCL_INSPECTOR_DUMP_VERBOSE=1), and lasts its exec time; without those timestamps a
// record carries only the time of its dump, so the records of one dump are laid back to back in
// sequence order ending there (durations exact, start times approximate: a warning says so).
// Inspector's own bandwidths and timing source are kept in each event's label, beside what
// xfertop computes from the same bytes and time. A collective's node count (nnodes, n_nodes) says
// whether its bus bytes stay in one host (timeline.AuxOneHost: NVLink) or cross hosts
// (timeline.AuxManyHosts), whatever the analysis knows of the layout. A Prometheus series is one
// GPU's aggregate over a dump interval: its collective carries no op id, so the analysis takes it
// as a whole instance (at Inspector's bandwidth) rather than one rank's part of one waiting for
// the others.
//
// Damage is read past, with a warning naming the file and line: a record whose number is out of
// its field's range is left out; an operation whose size over its exec time is a rate no GPU
// reaches (above 100 TB/s) keeps its size with its exec time unknown; a cut last line (a log still
// being written, with or without its newline) is left out and the lines before it stand, and a
// file cut inside its first line is said to be; a damaged line among records (not JSON: a
// garbled or spliced write) is left out the same way, the records before and after it kept, the
// first five named and all counted per file; in a Prometheus dump a NaN exec time leaves its
// series out and a NaN busbw leaves that value out, each at the line it is on.
//
// Each file is read on its own before it joins the others. A file that cannot be read as
// Inspector's (a first line that is no record, a gzip stream cut short) or that is of another
// job (a communicator it reports on has another size there than more of the other files say) is
// left out with a warning naming it and the line, and the rest are read; only when no file is
// left is the import refused, with the first file's error. Two processes holding one rank of one
// communicator (a rank's log twice: a restarted process, another job's log under that id) are an
// error naming both files, as a recording given twice is.
//
// Ranks and hosts are merged through join.Join, as a live attach merges its ranks. Format
// versions v4.0 to v4.3 are read (NCCL 2.28 to 2.32): v4.3 writes a dump_stats marker carrying
// the header and metadata once per communicator dump, and the operation lines after it take
// their context from it.
package inspector
