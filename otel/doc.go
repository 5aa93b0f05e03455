// Package otel exports a session's transfers as OpenTelemetry spans over OTLP (gRPC or
// HTTP/protobuf), so they land in Jaeger or an OpenTelemetry Collector beside an application's own
// traces.
//
// Each step is a trace whose root span covers the step; transfers, collectives (one span per rank),
// group launches, barrier waits and communicator creations are spans in it with the engine's real
// start and end times, mapped onto the wall clock from the session's epoch. Ops in a group are
// children of the group's span; a send and its receive are tied by span links; an op that failed or
// timed out carries error status and the alert's message. Every host is its own resource
// (host.name). Attributes are documented in docs/otel.md.
//
// The Exporter is a timeline.Sink that never blocks its producer: events go through a bounded queue
// to a goroutine that builds and exports spans; when the collector is slow or down, what does not fit
// is dropped and counted, and export resumes by itself when the collector comes back. Close waits for
// the collector at most the shutdown budget (Config.ShutdownTimeout), and not at all once it refuses
// connections; after Close, every span built has been counted exported or dropped.
package otel
