// Package scenario describes workloads declaratively and runs them on an engine client.
//
// A scenario file (YAML) names a topology, a number of steps, knobs (named values a user can change
// with --set key=value), engine settings and a list of phases. Each phase is one of the workload
// patterns this package knows (compute, copy, collective, sweep, ragged_alltoall, barrier, pipeline,
// overlap, crosshost, sendrecv, copy_sweep, tp_layers, llm_train) with its parameters; any value may refer to a
// knob as ${name}.
// Built-in scenarios are embedded files; users load their own by path. docs/scenarios.md documents
// the format.
//
// Run executes a scenario step by step: each step issues every phase's work, runs the engine until it
// completes, and emits a step event.
package scenario
