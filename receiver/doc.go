// Package receiver is xfertop's OTLP receiver: it takes traces over gRPC and HTTP/protobuf (the
// standard OTLP services, on 4317 and 4318), keeps the spans xfertop exported (xfertop.kind),
// turns them back into timeline events and merges the senders into one stream on one time axis.
//
// Senders exporting with detail full (otel.DetailFull) number their events; the merger puts them
// back in the order they were produced, drops duplicates from retried requests and counts what
// never came, so the analysis of the merged stream equals the senders' own. Spans from senders
// with the default detail are taken as they come, and the stats say which parts of the analysis
// are then partial.
//
// Safe by default: the listener binds loopback unless given TLS and a bearer token; requests are
// bounded in bytes and spans; and when the merger falls behind, requests are refused with the
// OTLP retryable answer (gRPC ResourceExhausted with RetryInfo, HTTP 429 with Retry-After), so
// the data waits in the senders' queues instead of being dropped here.
package receiver
