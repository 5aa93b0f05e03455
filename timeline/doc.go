// Package timeline holds xfertop's event model and the pure analyses that run over it.
//
// Everything that happens in a session (a copy, a send, a kernel, a barrier wait, a communicator
// created) is one Event: a small fixed-size value with no pointers, so millions of them fit in memory
// and stream to disk fast. Strings are interned in a Strings table and referred to by a small integer.
//
// The analyses (idle gaps by cause, temporal breakdown, overlap, bandwidth, barriers, steps) are pure
// functions over a slice of events: they know nothing of the engine that produced the events or of the
// console that shows the results, so they work the same on live runs, replays and imported traces.
package timeline
