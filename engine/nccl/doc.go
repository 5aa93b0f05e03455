// Package nccl loads NCCL (libnccl.so.2, or XFER_NCCL_LIB) with dlopen at run time and calls it:
// communicators, groups, send/receive and collectives. NCCL's few types are declared here, so
// building needs neither NCCL's headers nor its library; where it is missing, loading fails with an
// error that names what was looked for.
package nccl
