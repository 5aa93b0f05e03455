// Package nsystest writes synthetic Nsight Systems SQLite exports for tests and benchmarks: the
// tables of an older Nsight Systems (2024.1) with a few rows, and large exports made with SQL
// alone (millions of kernels, as a long capture holds).
package nsystest
