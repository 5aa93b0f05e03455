package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/charmbracelet/x/term"

	"github.com/xfertop/xfertop/units"
)

// isTerminal reports whether w is a terminal (progress lines are for people only).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

// runProgressLine says how far a run has got.
func runProgressLine(events, nowNs, steps int64) string {
	return fmt.Sprintf("xfertop: t %s simulated, %d steps, %d events", units.Dur(nowNs), steps, events)
}

// showProgress rewrites one progress line on w every interval until the returned stop is called,
// which clears it. read says how far the run has got.
func showProgress(w io.Writer, every time.Duration, read func() (int64, int64, int64)) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				fmt.Fprint(w, "\r\033[K")
				return
			case <-t.C:
				fmt.Fprint(w, "\r\033[K"+runProgressLine(read()))
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
