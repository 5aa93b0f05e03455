package receiver

import (
	"bytes"
	stdgzip "compress/gzip"
	"context"
	"io"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
)

// gRPC's "gzip" is this package's, whatever else registered one, and it reads what the standard
// library's gzip writes and writes what it reads, request after request from its pools; a body
// that is not gzip is an error.
func TestGzipCompressor(t *testing.T) {
	c, ok := encoding.GetCompressor("gzip").(*gzipCompressor)
	if !ok {
		t.Fatalf("gRPC's gzip is %T; want this package's", encoding.GetCompressor("gzip"))
	}
	for i := range 3 {
		want := bytes.Repeat([]byte{byte(i), 'o', 't', 'l', 'p'}, 50_000+i)
		var z bytes.Buffer
		w := stdgzip.NewWriter(&z)
		w.Write(want)
		w.Close()
		r, err := c.Decompress(&z)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.(io.Closer).Close()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("request %d: %d bytes of %d, %v", i, len(got), len(want), err)
		}
		var back bytes.Buffer
		cw, _ := c.Compress(&back)
		cw.Write(want)
		if err := cw.Close(); err != nil {
			t.Fatal(err)
		}
		sr, err := stdgzip.NewReader(&back)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := io.ReadAll(sr); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("response %d: %d bytes of %d, %v", i, len(got), len(want), err)
		}
	}
	if _, err := c.Decompress(bytes.NewReader([]byte("not gzip"))); err == nil {
		t.Error("a body that is not gzip was taken")
	}
}

// Requests compressed with gzip, as a Collector sends them, are taken over gRPC, one after
// another on a connection (the pooled readers reused), and the events come out whole.
func TestGRPCGzipRequests(t *testing.T) {
	l, _ := listen(t, Config{GRPC: "127.0.0.1:0"}, nil)
	client := grpcClient(t, l.GRPCAddr().String(), nil)
	for i := range 4 {
		if _, err := client.Export(context.Background(), kernels("s", int64(i*100), 100), grpc.UseCompressor("gzip")); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	_ = l.Close(context.Background())
	if tot := l.Totals(); tot.Events != 400 || tot.Lost != 0 || tot.Rejected != 0 {
		t.Errorf("totals %+v; want 400 events, none lost or rejected", tot)
	}
}
