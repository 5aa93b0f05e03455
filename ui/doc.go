// Package ui is xfertop's console: a Bubble Tea program that shows a session live or replayed.
//
// The console reads a Source (a live run or a replay; they look the same to it) by taking a
// snapshot of its event window on a tick, folding the new events into an aggregate (ui/agg), and
// drawing one of seven views from it: overview, timeline, transfers, barriers, idle, comms and
// events. Update never blocks and never does I/O; heavy analyses (idle time by cause) run as
// commands and come back as messages.
package ui
