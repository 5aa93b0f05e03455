package receiver

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
)

// waitState waits for cc to leave state from (or reach it, when leave is false), and reports
// whether it did before ctx ended.
func waitState(ctx context.Context, cc *grpc.ClientConn, s connectivity.State, leave bool) bool {
	for {
		cur := cc.GetState()
		if (cur != s) == leave {
			return true
		}
		if !cc.WaitForStateChange(ctx, cur) {
			return false
		}
	}
}

// A gRPC connection that carries no call for MaxConnIdle is closed by the listener (the client
// goes from READY back to IDLE), as the HTTP server closes its idle keep-alive connections.
func TestGRPCIdleConnectionClosed(t *testing.T) {
	l, _ := listen(t, Config{GRPC: "127.0.0.1:0", MaxConnIdle: 50 * time.Millisecond}, nil)
	cc, err := grpc.NewClient(l.GRPCAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cc.Connect()
	if !waitState(ctx, cc, connectivity.Ready, false) {
		t.Fatalf("never connected: %v", cc.GetState())
	}
	if !waitState(ctx, cc, connectivity.Ready, true) {
		t.Fatalf("an idle connection was kept open: %v", cc.GetState())
	}
}

// Past MaxConns open connections a new one is closed at once and logged; once one closes, a
// sender connects again.
func TestConnectionCap(t *testing.T) {
	l, logs := listen(t, Config{MaxConns: 2}, nil)
	for _, addr := range []string{l.GRPCAddr().String(), l.HTTPAddr().String()} {
		var held []net.Conn
		for range 2 {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
		}
		over, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		// Without the cap the listener would wait for this connection's request: the read
		// would block until the deadline, which only a failing test reaches.
		_ = over.SetReadDeadline(time.Now().Add(30 * time.Second))
		if _, err := over.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
			t.Errorf("%s: a connection over the cap: read %v; want it closed", addr, err)
		}
		over.Close()
		for _, c := range held {
			c.Close()
		}
	}
	if !logs.has("--max-conns") {
		t.Errorf("no log line names --max-conns: %v", logs.lines)
	}
	// The places are given back: a gRPC sender gets through.
	cc, err := grpc.NewClient(l.GRPCAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// WaitForReady: the first attempt may come before the listener has seen the others close.
	if _, err := collectortrace.NewTraceServiceClient(cc).Export(ctx, kernels("s", 0, 1), grpc.WaitForReady(true)); err != nil {
		t.Fatalf("after the capped connections closed: %v", err)
	}
}

// isReset reports whether err is a connection reset by the peer (a close with unread data).
func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}
