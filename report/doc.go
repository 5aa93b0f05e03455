// Package report formats the analysis of a stream as the report xfertop prints: what ran, steps,
// transfers by kind and size class, collectives with nccl-tests algbw/busbw, the communicator
// cache, groups, barriers and stragglers, idle time by cause, HTA's temporal breakdown and overlap
// per device and pooled, link traffic per device, telemetry and alerts. It computes nothing: every
// number comes from package analysis, so the report, the console and the exporter agree. Text
// renders it for people; the Report struct marshals to the JSON documented in docs/report.md.
package report
