package receiver

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/xfertop/xfertop/timeline"
)

func TestCheckRefusesExposedAddresses(t *testing.T) {
	tests := []struct {
		cfg  Config
		want error // nil: accepted
	}{
		{Config{GRPC: DefaultGRPC, HTTP: DefaultHTTP}, nil},
		{Config{GRPC: "localhost:4317"}, nil},
		{Config{HTTP: "[::1]:4318"}, nil},
		{Config{GRPC: "0.0.0.0:4317"}, ErrExposed},
		{Config{GRPC: ":4317"}, ErrExposed},
		{Config{HTTP: "10.0.0.5:4318", Token: "t"}, ErrExposed},                     // a token without TLS
		{Config{HTTP: "10.0.0.5:4318", TLSCert: "c", TLSKey: "k"}, ErrExposed},      // TLS without a token
		{Config{HTTP: "10.0.0.5:4318", TLSCert: "c", TLSKey: "k", Token: "t"}, nil}, // both
		{Config{GRPC: "0.0.0.0:4317", TLSCert: "c", TLSKey: "k", Token: "t"}, nil},  // both
		{Config{GRPC: "127.0.0.1:4317", TLSCert: "c"}, errors.New("go together")},   // half a certificate
		{Config{}, errors.New("nothing to listen on")},                              // nothing
		{Config{GRPC: "4317"}, errors.New("give host:port")},                        // no host
		{Config{GRPC: "127.0.0.1:4317", HTTP: "0.0.0.0:4318"}, ErrExposed},          // either address
		{Config{GRPC: "example.com:4317", TLSCert: "c", TLSKey: "k"}, ErrExposed},   // a name is not loopback
		{Config{GRPC: "127.0.0.2:4317"}, nil},                                       // all of 127/8 is loopback
		{Config{HTTP: "[::]:4318"}, ErrExposed},                                     // every interface
		{Config{HTTP: "192.168.0.1:4318", TLSKey: "k", TLSCert: "c", Token: ""}, ErrExposed},
		{Config{HTTP: ":-1"}, errors.New("--http :-1: port -1 is out of range (a port is 0 to 65535)")},     // the port, not the host, is wrong
		{Config{GRPC: "127.0.0.1:99999"}, errors.New("--grpc 127.0.0.1:99999: port 99999 is out of range")}, // a usage error, before binding
		{Config{GRPC: "127.0.0.1:nosuchservice"}, errors.New(`port "nosuchservice" is neither a number`)},
		{Config{GRPC: "127.0.0.1:0"}, nil}, // any free port
		{Config{GRPC: "127.0.0.1:"}, nil},  // likewise
	}
	for _, tc := range tests {
		err := tc.cfg.Check()
		switch {
		case tc.want == nil && err != nil:
			t.Errorf("Check(%+v) = %v; want accepted", tc.cfg, err)
		case tc.want == ErrExposed && !errors.Is(err, ErrExposed):
			t.Errorf("Check(%+v) = %v; want %v", tc.cfg, err, ErrExposed)
		case tc.want != nil && tc.want != ErrExposed && (err == nil || !strings.Contains(err.Error(), tc.want.Error())):
			t.Errorf("Check(%+v) = %v; want %q", tc.cfg, err, tc.want)
		}
	}
}

// logLines collects the listener's log lines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, a...))
}

func (l *logLines) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, x := range l.lines {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}

func listen(t *testing.T, cfg Config, sink timeline.Sink) (*Listener, *logLines) {
	t.Helper()
	logs := &logLines{}
	if cfg.GRPC == "" && cfg.HTTP == "" {
		cfg.GRPC, cfg.HTTP = "127.0.0.1:0", "127.0.0.1:0"
	}
	cfg.Logf = logs.logf
	if sink == nil {
		sink = &collect{}
	}
	l, err := Listen(cfg, timeline.NewStrings(), func(timeline.Meta) timeline.Sink { return sink })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close(context.Background()) })
	return l, logs
}

func grpcClient(t *testing.T, addr string, creds credentials.TransportCredentials) collectortrace.TraceServiceClient {
	t.Helper()
	if creds == nil {
		creds = insecure.NewCredentials()
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return collectortrace.NewTraceServiceClient(cc)
}

func post(t *testing.T, client *http.Client, url string, body []byte, header map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/x-protobuf")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// selfSigned writes a certificate and key for 127.0.0.1 and returns their paths and a pool trusting it.
func selfSigned(t *testing.T) (cert, key string, pool *x509.CertPool) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "xfertop test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	c, _ := x509.ParseCertificate(der)
	pool.AddCert(c)
	return cert, key, pool
}

// With TLS and a token: requests without the token are refused (Unauthenticated, 401) and counted;
// with it they are taken.
func TestTokenAndTLS(t *testing.T) {
	cert, key, pool := selfSigned(t)
	l, logs := listen(t, Config{TLSCert: cert, TLSKey: key, Token: "s3cret"}, nil)
	tc := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	client := grpcClient(t, l.GRPCAddr().String(), credentials.NewTLS(tc))
	req := kernels("s", 0, 3)
	ctx := context.Background()
	if _, err := client.Export(ctx, req); status.Code(err) != codes.Unauthenticated {
		t.Errorf("gRPC without a token: %v; want Unauthenticated", err)
	}
	bad := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer wrong")
	if _, err := client.Export(bad, req); status.Code(err) != codes.Unauthenticated {
		t.Errorf("gRPC with a wrong token: %v; want Unauthenticated", err)
	}
	good := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer s3cret")
	if _, err := client.Export(good, req); err != nil {
		t.Errorf("gRPC with the token: %v", err)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
	url := "https://" + l.HTTPAddr().String() + "/v1/traces"
	body := marshal(t, kernels("s", 3, 3))
	if resp := post(t, hc, url, body, nil); resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("HTTP without a token: %s; want 401 with WWW-Authenticate", resp.Status)
	}
	if resp := post(t, hc, url, body, map[string]string{"Authorization": "Bearer s3cret"}); resp.StatusCode != http.StatusOK {
		t.Errorf("HTTP with the token: %s", resp.Status)
	}
	// Plaintext to a TLS port does not get through.
	if resp, err := http.Post("http://"+l.HTTPAddr().String()+"/v1/traces", "application/x-protobuf", bytes.NewReader(body)); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plaintext HTTP was taken by a TLS listener")
		}
	}
	_ = l.Close(context.Background())
	tot := l.Totals()
	if tot.Rejected != 3 || tot.Events != 6 || !logs.has("no valid bearer token") {
		t.Errorf("totals %+v, logs %v; want 3 rejected, 6 events and a log line", tot, logs.lines)
	}
}

// Requests over the limits are refused, for good, with a log line naming the flag.
func TestLimits(t *testing.T) {
	l, logs := listen(t, Config{MaxSpansPerRequest: 4, MaxMessageBytes: 2000}, nil)
	client := grpcClient(t, l.GRPCAddr().String(), nil)
	ctx := context.Background()
	if _, err := client.Export(ctx, kernels("s", 0, 5)); status.Code(err) != codes.InvalidArgument {
		t.Errorf("5 spans over a limit of 4: %v; want InvalidArgument (not retryable)", err)
	}
	if !logs.has("--max-spans-per-request") {
		t.Errorf("no log line names --max-spans-per-request: %v", logs.lines)
	}
	big := kernels("s", 0, 3)
	big.ResourceSpans[0].ScopeSpans[0].Spans[0].Name = strings.Repeat("x", 3000)
	if _, err := client.Export(ctx, big); status.Code(err) != codes.ResourceExhausted || retryDelay(err) != 0 {
		t.Errorf("a 3 kB request over a limit of 2 kB: %v; want ResourceExhausted without RetryInfo (not retryable)", err)
	}
	url := "http://" + l.HTTPAddr().String() + "/v1/traces"
	if resp := post(t, http.DefaultClient, url, marshal(t, big), nil); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("HTTP: %s; want 413", resp.Status)
	}
	if resp := post(t, http.DefaultClient, url, []byte{0x0a, 0xff}, nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("HTTP malformed: %s; want 400", resp.Status)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !logs.has("--max-message-bytes") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // gRPC's stats handler runs after the answer is sent
	}
	if !logs.has("--max-message-bytes") {
		t.Errorf("no log line names --max-message-bytes: %v", logs.lines)
	}
}

func retryDelay(err error) time.Duration {
	for _, d := range status.Convert(err).Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return ri.GetRetryDelay().AsDuration()
		}
	}
	return 0
}

// blockingSink holds the merger in its first Emit until released.
type blockingSink struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
	n       int
}

func (b *blockingSink) Emit(*timeline.Event) {
	b.once.Do(func() {
		close(b.entered)
		<-b.release
	})
	b.n++
}

// When the merger falls behind, requests are refused with the retryable answer, and taken again
// once it catches up.
func TestBackPressure(t *testing.T) {
	sink := &blockingSink{entered: make(chan struct{}), release: make(chan struct{})}
	l, _ := listen(t, Config{QueueSpans: 10, RetryAfter: 2 * time.Second}, sink)
	client := grpcClient(t, l.GRPCAddr().String(), nil)
	ctx := context.Background()
	if _, err := client.Export(ctx, kernels("s", 0, 5)); err != nil {
		t.Fatal(err)
	}
	<-sink.entered // the merger is stuck in the first request
	if _, err := client.Export(ctx, kernels("s", 5, 5)); err != nil {
		t.Fatalf("the queue has room for 10 spans: %v", err)
	}
	_, err := client.Export(ctx, kernels("s", 10, 5))
	if status.Code(err) != codes.ResourceExhausted || retryDelay(err) != 2*time.Second {
		t.Fatalf("a full queue: %v (retry delay %v); want ResourceExhausted with RetryInfo of 2s", err, retryDelay(err))
	}
	url := "http://" + l.HTTPAddr().String() + "/v1/traces"
	resp := post(t, http.DefaultClient, url, marshal(t, kernels("s", 10, 5)), nil)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "2" {
		t.Fatalf("HTTP with a full queue: %s, Retry-After %q; want 429 and 2", resp.Status, resp.Header.Get("Retry-After"))
	}
	close(sink.release)
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := client.Export(ctx, kernels("s", 10, 5))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still refused after the merger caught up: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = l.Close(context.Background())
	tot := l.Totals()
	if tot.Refused != 10 || tot.Events != 15 || tot.Lost != 0 || sink.n != 15 {
		t.Errorf("totals %+v, sink %d; want 10 spans refused (and resent), all 15 events through, none lost", tot, sink.n)
	}
}

// 64 senders at once, each its own session, through a queue small enough that some are told to
// retry: every event arrives exactly once.
func TestLoad64Senders(t *testing.T) {
	const senders, requests, spans = 64, 5, 100
	sink := &collect{}
	l, _ := listen(t, Config{QueueSpans: 2000, RetryAfter: 5 * time.Millisecond}, sink)
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cc, err := grpc.NewClient(l.GRPCAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				errs <- err
				return
			}
			defer cc.Close()
			client := collectortrace.NewTraceServiceClient(cc)
			session := fmt.Sprintf("sender-%d", s)
			for r := range requests {
				req := kernelsOn(session, s, int64(r*spans), spans) // each sender a host of one job
				for {
					_, err := client.Export(context.Background(), req)
					if err == nil {
						break
					}
					if d := retryDelay(err); status.Code(err) == codes.ResourceExhausted && d > 0 {
						time.Sleep(d) // as an OTLP exporter does
						continue
					}
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	_ = l.Close(context.Background())
	tot := l.Totals()
	if want := int64(senders * requests * spans); tot.Events != want || int64(len(sink.evs)) != want || tot.Lost != 0 || tot.Duplicates != 0 || len(tot.Hosts) != senders {
		t.Errorf("totals %+v; want %d events from %d senders, none lost or duplicated", tot, want, senders)
	}
	t.Logf("%d spans refused and resent", tot.Refused)
}

// A closed gate (a recording that can no longer be written) refuses every request as unavailable,
// the answer a Collector gives when it cannot keep data: gRPC Unavailable, HTTP 503 with
// Retry-After; nothing is taken, and the spans are counted refused (the senders keep them).
func TestGateRefusesAsUnavailable(t *testing.T) {
	var mu sync.Mutex
	var closed error
	sink := &collect{}
	l, _ := listen(t, Config{Gate: func() error { mu.Lock(); defer mu.Unlock(); return closed }}, sink)
	client := grpcClient(t, l.GRPCAddr().String(), nil)
	if _, err := client.Export(context.Background(), kernels("s", 0, 3)); err != nil {
		t.Fatalf("open gate: %v", err)
	}
	mu.Lock()
	closed = errors.New("recording full.xfr: no space left on device")
	mu.Unlock()
	_, err := client.Export(context.Background(), kernels("s", 3, 3))
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "no space left on device") {
		t.Errorf("gRPC with the gate closed: %v; want Unavailable saying why", err)
	}
	url := "http://" + l.HTTPAddr().String() + "/v1/traces"
	resp := post(t, http.DefaultClient, url, marshal(t, kernels("s", 6, 3)), nil)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("HTTP with the gate closed: %s, Retry-After %q; want 503 with Retry-After 1", resp.Status, resp.Header.Get("Retry-After"))
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if tot := l.Totals(); tot.Spans != 3 || tot.Refused != 6 || len(sink.evs) != 3 {
		t.Errorf("totals %+v, %d events; want the first 3 spans taken, the 6 after refused", tot, len(sink.evs))
	}
}

// A request whose declared Content-Length is over the limit is answered at once, without waiting
// for a body the sender may never send.
func TestHTTPContentLengthOverLimit(t *testing.T) {
	l, logs := listen(t, Config{MaxMessageBytes: 2000}, nil)
	conn, err := net.Dial("tcp", l.HTTPAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := "POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nContent-Length: 99999999999\r\n\r\n"
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	// Only a guard against hanging the whole run: the answer is expected at once, before any body.
	conn.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read the answer: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("status %s; want 413", resp.Status)
	}
	if !strings.Contains(string(body), "2000 bytes") || !strings.Contains(string(body), "--max-message-bytes") {
		t.Errorf("body %q does not name the limit", body)
	}
	if !logs.has("--max-message-bytes") {
		t.Errorf("no log line names --max-message-bytes: %v", logs.lines)
	}
}
