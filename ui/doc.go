// Package ui is xfertop's console: a Bubble Tea program that shows a session live or replayed.
//
// The console reads a Source (a live run or a replay; they look the same to it): on each tick a
// command, off the console's goroutine, takes a snapshot of its event window, folds the new events
// into an aggregate (ui/agg) and the analysis and publishes a read-only frame, which the console
// then draws one view from; its own goroutine only draws. Each view is a widget in its own package under
// ui/views (overview, timeline, transfers, barriers, idle, comms, events) drawing from a
// widget.Frame; the root holds them in a slice, routes keys and the mouse to the one shown, and
// builds help from its keys. Update never blocks and never does I/O.
package ui
