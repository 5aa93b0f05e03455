package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The progress line of a paced run says how far it has got, rewrites itself, and is cleared at the end.
func TestShowProgress(t *testing.T) {
	if got := runProgressLine(1234, 2_500_000_000, 9); got != "xfertop: t 2.50 s simulated, 9 steps, 1234 events" {
		t.Errorf("progressLine = %q", got)
	}
	var w lockedBuffer
	var n int64
	stop := showProgress(&w, time.Millisecond, func() (int64, int64, int64) { n++; return n, n * 1e6, 0 })
	for deadline := time.Now().Add(5 * time.Second); strings.Count(w.String(), "events") < 2 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	stop()
	out := w.String()
	if strings.Count(out, "events") < 2 || !strings.HasSuffix(out, "\r\033[K") {
		t.Errorf("progress output %q; want lines rewritten in place and cleared at the end", out)
	}
}
