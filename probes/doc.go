// Package probes is the home of event sources that run beside the engine and observe the machine:
// probes/nvml samples GPU telemetry through NVML.
package probes
