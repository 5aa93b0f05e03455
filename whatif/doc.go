// Package whatif replays a trace's dependency graph (package depgraph) with one thing changed, and
// predicts what the trace would have measured: compute kernels keep their measured durations or are
// scaled; collectives whose size and ranks the trace records are re-timed by the engine's NCCL cost
// model (engine/sim.PredictNCCL) on a chosen topology, with a forced algorithm or protocol, or on
// more hosts; every other op keeps its measured duration, and every dependency its measured lag.
//
// The replay is a list-scheduling pass over the graph, not a run of the simulator: it honours the
// trace's dependencies and the engine's cost model for collectives, but not the simulator's link
// sharing between concurrent transfers (a fused NCCL group's collectives add their times). Its
// output is events, like any producer's: the report and the compare view read them as they read a
// trace. docs/whatif.md gives the method and its measured fidelity.
//
// Stream replays a trace a step at a time, holding a step's graph and what the next steps reach
// back to, not the trace: a first pass (Plan) finds where the steps begin, the second builds and
// replays each step's window with the points of earlier windows pinned at their replayed times.
// It says exactly what Run, the whole trace in one graph, says (TestStreamMatchesRunRealTraces,
// TestStreamMatchesRunSynthetic); Run is the same graph and replay with one window.
package whatif
