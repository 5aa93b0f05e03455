// Command xfertop is a console for GPU data movement: it runs a workload on its embedded transfer
// engine (a simulated GPU cluster by default) and shows which bytes move where, how fast, and where
// devices sit idle and why.
//
// Usage:
//
//	xfertop [run] [flags]        run a scenario and report (headless until the console lands)
//	xfertop scenarios            list the built-in scenarios and their knobs
//	xfertop help                 this text
//
// Exit status: 0 success; 1 a runtime failure; 2 bad flags, scenario or knobs; 3 the run ended with
// a watchdog alert or a deadlock (the report says which).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/xfertop/xfertop/otel"
)

func main() {
	otel.QuietErrors()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := xfertop(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
