// Package preflight checks, before gorgonia.org/cu is initialised, that the CUDA driver can start.
//
// cu calls cuInit in its package init and exits the process with status 1 when that fails, so a
// cuda build on a machine without a usable GPU would otherwise die with cu's message before any
// xfertop code runs. Go initialises ready packages in import-path order, and this package's path
// sorts before gorgonia.org/cu while importing only packages cu imports too, so its init runs
// first: a test binary then skips its GPU tests with the reason, and the xfertop binary exits with
// an error that says what is missing and which build to use instead.
package preflight
