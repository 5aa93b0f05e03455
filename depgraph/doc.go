// Package depgraph builds the dependency graph of a trace's events and finds its critical path.
//
// The graph is over time points: the start and the end of each op (a GPU op, a host runtime call,
// a step), plus one join point per collective or send/receive instance. An edge says that its
// target point cannot come before its source point plus the edge's weight: an op's duration, or 0
// for a dependency. Dependencies are those the trace records (stream order, the runtime call that
// launched a GPU op by correlation, an event record and its wait, rank parts of one collective by
// op id, a send and its receive), and a few it does not record but implies, each counted as
// inferred (a host synchronisation bound to the GPU op that ended inside it, an event wait bound to
// the op of another stream that ended inside it). A dependency its timestamps contradict is not
// added, and counted.
//
// Every point keeps its measured time; what its dependencies do not explain (a host gap, a launch
// latency) is its residual. Replaying the graph with changed weights (package whatif) keeps the
// residuals; the critical path follows, backwards from a step's end, the dependency that bound
// each point, as Holistic Trace Analysis's critical-path analysis does on its graph.
//
// The graph is a consumer of timeline events: it never reaches back into an importer or the engine.
package depgraph
