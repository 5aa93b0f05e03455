// Package session wires one run of xfertop: it loads a scenario, applies knobs, builds the backend
// and the engine client, runs the workload, and fans the events out to the store and any other
// sinks (recorder, exporter, console). The command, the console and the tests all start runs here.
package session
