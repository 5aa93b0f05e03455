// Package synth writes synthetic PyTorch profiler traces of a job of several ranks and steps, to
// test and measure the what-if replay on traces of any size: every step has the same shape, and
// durations come from a seed.
package synth
