// Command xfertop is a console for GPU data movement: it runs a workload on its embedded transfer
// engine (a simulated GPU cluster by default) and shows which bytes move where, how fast, and where
// devices sit idle and why.
//
// Usage:
//
//	xfertop [run] [flags]        run a scenario: the console, or a report with --headless
//	xfertop replay FILE [flags]  replay a recording (.xfr), traces or Nsight Systems exports: the
//	                             console, or the report with --headless
//	xfertop listen [flags]       receive other hosts' xfertop over OTLP (gRPC 4317, HTTP 4318)
//	xfertop analyze FILE...      report on a recording, Kineto / Chrome traces or Nsight Systems
//	                             exports (.sqlite); an nccl-tests
//	                             log as a reference (with --topology: against the simulated sweep)
//	xfertop nccl-tests OP        nccl-tests' sweep of OP simulated, in nccl-tests' columns
//	xfertop convert IN OUT       .xfr -> Chrome trace JSON; traces and Nsight exports -> .xfr
//	xfertop scenarios            list the built-in scenarios and their knobs
//	xfertop topologies [NAME]    list the built-in topologies, or print one's file
//	xfertop help                 the flags and the exit statuses
//
// Exit status: 0 success; 1 a runtime failure (a recording that cannot be written, a full disk);
// 2 a usage error; 3 a watchdog alert or a deadlock ended the run; 4 bad input data (a corrupt
// recording, a malformed trace); 5 with --otlp-required, the OTLP export failed; 130 interrupted by SIGINT, SIGTERM or SIGHUP (the report of what ran is
// printed and the recording closed). See exit.go.
//
// Environment: XFERTOP_MEMSTATS=FILE appends the process's heap figures to FILE every second (for
// soak tests; see scripts/soak.sh). XFERTOP_CPUPROFILE=FILE writes a CPU profile of the whole
// process to FILE, for go tool pprof (docs/performance.md); XFERTOP_HEAPPROFILE=FILE a heap profile
// taken at the largest live heap the process reached.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/xfertop/xfertop/otel"
)

func main() {
	otel.QuietErrors()
	stopMem, err := startMemStats(os.Getenv(memStatsEnv), time.Second)
	if err != nil {
		fmt.Fprintf(os.Stderr, "xfertop: %v\n", err)
		os.Exit(exitFailure)
	}
	stopProf, err := startCPUProfile(os.Getenv(cpuProfileEnv))
	if err != nil {
		fmt.Fprintf(os.Stderr, "xfertop: %v\n", err)
		os.Exit(exitFailure)
	}
	stopHeap, err := startHeapProfile(os.Getenv(heapProfileEnv), 250*time.Millisecond)
	if err != nil {
		fmt.Fprintf(os.Stderr, "xfertop: %v\n", err)
		os.Exit(exitFailure)
	}
	code := xfertop(signalContext(), os.Args[1:], os.Stdout, os.Stderr)
	if err := stopHeap(); err != nil && code == exitOK {
		fmt.Fprintf(os.Stderr, "xfertop: %v\n", err)
		code = exitFailure
	}
	if err := stopProf(); err != nil && code == exitOK {
		fmt.Fprintf(os.Stderr, "xfertop: %v\n", err)
		code = exitFailure
	}
	if err := stopMem(); err != nil && code == exitOK {
		fmt.Fprintf(os.Stderr, "xfertop: %v\n", err)
		code = exitFailure
	}
	os.Exit(code)
}

// signalContext is cancelled, with an *interruptedError naming the signal as its cause, at the
// first SIGINT, SIGTERM or SIGHUP (the terminal closed): the run stops, reports what ran, closes its
// recording and removes its temporary files (an imported trace's recording: as big as the trace).
// That signal also restores the default handling, so a second one ends the process at once. SIGHUP
// is left alone when it was ignored at start (nohup): the command then goes on as asked.
func signalContext() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	if !signal.Ignored(syscall.SIGHUP) {
		signal.Notify(sigs, syscall.SIGHUP)
	}
	go func() {
		sig := <-sigs
		signal.Stop(sigs)
		cancel(&interruptedError{sig: sig})
	}()
	return ctx
}
