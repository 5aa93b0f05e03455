// Package report turns a session's events into the report xfertop prints: steps, transfers by
// direction, collectives with nccl-tests algbw/busbw, the communicator cache, groups, barriers and
// stragglers, idle time by cause with HTA's temporal breakdown, communication/computation overlap,
// and alerts. It is built only from events, so a live run, a replay and an imported trace report
// alike. Text renders it for people; the Report struct marshals to the documented JSON.
package report
