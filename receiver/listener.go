package receiver

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"

	"github.com/xfertop/xfertop/fileerr"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/units"
)

// tickEvery is how often the merger gives up stale gaps and samples the span rate.
const tickEvery = 100 * time.Millisecond

// Listener receives OTLP traces over gRPC and HTTP/protobuf and merges xfertop's spans into one
// event stream (Merger). Handlers decode requests on their own goroutines and hand them to the
// merger's goroutine through a queue bounded in spans; when it is full, the request is refused
// with the OTLP retryable answer (gRPC ResourceExhausted with RetryInfo, HTTP 429 with Retry-After),
// so the sender keeps the data and sends it again: nothing is dropped here.
type Listener struct {
	cfg    Config
	merger *Merger
	in     chan *Decoded
	free   sync.Pool
	queued atomic.Int64 // spans in the queue

	mu     sync.RWMutex // held for reading while a handler queues; Close takes it to close in
	closed bool

	grpc     *grpc.Server
	http     *http.Server
	grpcAddr net.Addr
	httpAddr net.Addr
	serving  sync.WaitGroup
	done     chan struct{}
	start    time.Time

	last     atomic.Int64 // Unix ns of the last request taken
	refused  atomic.Int64 // spans refused because the queue was full (the senders retry them)
	rejected atomic.Int64 // requests rejected for good: over a limit, malformed, unauthenticated
	logs     logLimiter

	statMu sync.Mutex
	stats  Stats
	rate   rateMeter
}

// Listen starts serving cfg's addresses. Events go, on the listener's own goroutine, to the sink
// that onMeta returns when the first sender's description arrives; labels are interned in strs.
func Listen(cfg Config, strs *timeline.Strings, onMeta func(timeline.Meta) timeline.Sink) (*Listener, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	cfg.defaults()
	l := &Listener{cfg: cfg, merger: NewMerger(strs, cfg.ReorderWait, onMeta), in: make(chan *Decoded, 4096),
		done: make(chan struct{}), start: time.Now()}
	l.free.New = func() any { return &Decoded{} }
	l.logs.logf = cfg.Logf
	l.merger.SetLog(l.logs.log)
	var tc *tls.Config
	if cfg.TLSCert != "" {
		cert, err := loadKeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return nil, &ConfigError{fmt.Errorf("--tls-cert %s, --tls-key %s: %w", cfg.TLSCert, cfg.TLSKey, err)}
		}
		tc = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	var lis []net.Listener
	conns := &connCap{max: int64(cfg.MaxConns), logs: &l.logs}
	closeAll := func() {
		for _, x := range lis {
			_ = x.Close()
		}
	}
	if cfg.GRPC != "" {
		x, err := net.Listen("tcp", cfg.GRPC)
		if err != nil {
			return nil, fmt.Errorf("--grpc %s: %w", cfg.GRPC, err)
		}
		l.grpcAddr = x.Addr()
		lis = append(lis, conns.wrap(x))
		opts := []grpc.ServerOption{grpc.ForceServerCodecV2(rawCodec{}), grpc.MaxRecvMsgSize(cfg.MaxMessageBytes),
			grpc.StatsHandler(sizeLogger{l}),
			// An idle connection is closed (GOAWAY; the sender reconnects when it has data), and a
			// silent peer is pinged and dropped, as the HTTP side's timeouts do.
			grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: cfg.MaxConnIdle, Time: time.Minute, Timeout: 20 * time.Second}),
			// Senders' own keepalive pings are welcome (a Collector's default is every 30 s).
			grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
			// A connection that never completes its handshake is not kept waiting two minutes.
			grpc.ConnectionTimeout(10 * time.Second)}
		if tc != nil {
			opts = append(opts, grpc.Creds(credentials.NewTLS(tc)))
		}
		l.grpc = grpc.NewServer(opts...)
		l.grpc.RegisterService(&traceServiceDesc, l)
		l.grpc.RegisterService(&metricsServiceDesc, l)
	}
	if cfg.HTTP != "" {
		x, err := net.Listen("tcp", cfg.HTTP)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("--http %s: %w", cfg.HTTP, err)
		}
		l.httpAddr = x.Addr()
		x = conns.wrap(x) // under TLS, so that the server still sees its *tls.Conn
		if tc != nil {
			x = tls.NewListener(x, tc)
		}
		lis = append(lis, x)
		mux := http.NewServeMux()
		mux.HandleFunc("/v1/traces", l.serveHTTP)
		mux.HandleFunc("/v1/metrics", l.serveMetricsHTTP)
		l.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: cfg.MaxConnIdle,
			ErrorLog: log.New(logWriter{&l.logs}, "", 0)} // TLS handshake failures and such, in our log
	}
	for _, x := range lis {
		l.serving.Add(1)
		go func() {
			defer l.serving.Done()
			if l.grpcAddr != nil && x.Addr() == l.grpcAddr {
				_ = l.grpc.Serve(x)
			} else {
				_ = l.http.Serve(x)
			}
		}()
	}
	go l.loop()
	return l, nil
}

// GRPCAddr is the address gRPC listens on (nil when it does not).
func (l *Listener) GRPCAddr() net.Addr { return l.grpcAddr }

// HTTPAddr is the address HTTP listens on (nil when it does not).
func (l *Listener) HTTPAddr() net.Addr { return l.httpAddr }

// Idle is how long since the last request was taken (since the start before any).
func (l *Listener) Idle(now time.Time) time.Duration {
	last := l.last.Load()
	if last == 0 {
		return now.Sub(l.start)
	}
	return now.Sub(time.Unix(0, last))
}

func (l *Listener) loop() {
	defer close(l.done)
	tick := time.NewTicker(tickEvery)
	defer tick.Stop()
	for {
		select {
		case d, ok := <-l.in:
			if !ok {
				l.merger.Flush()
				l.publish(time.Now())
				return
			}
			l.merger.Merge(d, time.Now())
			l.queued.Add(-int64(len(d.Spans)))
			l.free.Put(d)
			l.publish(time.Time{})
		case now := <-tick.C:
			l.merger.Tick(now)
			l.publish(now)
		}
	}
}

// publish copies the merger's counters for other goroutines; with a time, it samples the rate too.
func (l *Listener) publish(now time.Time) {
	st := l.merger.Stats()
	l.statMu.Lock()
	defer l.statMu.Unlock()
	if !now.IsZero() {
		l.rate.sample(now, st.Spans)
	}
	l.stats = st
}

// Totals are the listener's counters: the merger's and the servers'.
type Totals struct {
	Stats
	SpansPerSec float64 `json:"spans_per_sec"` // over the last second
	// Refused counts spans refused because the queue was full or the gate was closed (Config.Gate):
	// the senders keep and resend them, so they are not lost here. Rejected counts requests refused for good (over a limit, malformed,
	// without the token): their senders count them as dropped.
	Refused  int64 `json:"refused_spans"`
	Rejected int64 `json:"rejected_requests"`
}

// Totals returns the counters; safe from any goroutine.
func (l *Listener) Totals() Totals {
	l.statMu.Lock()
	t := Totals{Stats: l.stats, SpansPerSec: l.rate.perSec()}
	l.statMu.Unlock()
	t.Refused, t.Rejected = l.refused.Load(), l.rejected.Load()
	return t
}

// Meta is the first sender's description; call it only after Close (it belongs to the merger).
func (l *Listener) Meta() timeline.Meta { return l.merger.Meta() }

// Close stops taking requests (those under way finish, for at most ctx), merges what was queued,
// gives up the gaps still open, and returns once every event has reached the sink.
func (l *Listener) Close(ctx context.Context) error {
	var errs []error
	if l.http != nil {
		if err := l.http.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("HTTP shutdown: %w", err))
			_ = l.http.Close()
		}
	}
	if l.grpc != nil {
		stopped := make(chan struct{})
		go func() { l.grpc.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-ctx.Done():
			l.grpc.Stop()
			<-stopped
		}
	}
	l.serving.Wait()
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.in)
	}
	l.mu.Unlock()
	<-l.done
	l.logs.flush()
	return errors.Join(errs...)
}

var errQueueFull = errors.New("the console's queue is full")

// unavailableError is a request refused because the gate is closed: retryable, as the sender
// keeps the data.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string {
	return "xfertop listen cannot keep data now (" + e.err.Error() + "): retry later"
}

// take hands a decoded request to the merger, or refuses it when the queue is full.
func (l *Listener) take(d *Decoded) error {
	n := int64(len(d.Spans))
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return errors.New("the listener is closing")
	}
	if l.cfg.Gate != nil {
		if err := l.cfg.Gate(); err != nil {
			l.refused.Add(n)
			return &unavailableError{err}
		}
	}
	if q := l.queued.Add(n); q > int64(l.cfg.QueueSpans) && q != n {
		l.queued.Add(-n)
		l.refused.Add(n)
		return errQueueFull
	}
	select {
	case l.in <- d:
		l.last.Store(time.Now().UnixNano())
		return nil
	default:
		l.queued.Add(-n)
		l.refused.Add(n)
		return errQueueFull
	}
}

// authorized checks a request's Authorization header value against the token.
func (l *Listener) authorized(header string) bool {
	if l.cfg.Token == "" {
		return true
	}
	want := "Bearer " + l.cfg.Token
	return subtle.ConstantTimeCompare([]byte(header), []byte(want)) == 1
}

// decode reads one request; its errors are the sender's fault and are logged.
func (l *Listener) decode(body []byte, from, via string) (*Decoded, error) {
	d := l.free.Get().(*Decoded)
	if err := Decode(body, d, l.cfg.MaxSpansPerRequest); err != nil {
		l.free.Put(d)
		l.rejected.Add(1)
		if errors.Is(err, ErrTooManySpans) {
			l.logs.log("spans", "refused a request from %s over %s: %v; raise --max-spans-per-request, or make the sender's batches smaller", from, via, err)
		} else {
			l.logs.log("malformed", "refused a request from %s over %s: %v", from, via, err)
		}
		return nil, err
	}
	return d, nil
}

// logLimiter prints at most one line per reason a second, saying how many it held back.
type logLimiter struct {
	logf func(string, ...any)
	mu   sync.Mutex
	last map[string]time.Time
	held map[string]int
}

func (g *logLimiter) log(reason, format string, a ...any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.last == nil {
		g.last, g.held = map[string]time.Time{}, map[string]int{}
	}
	now := time.Now()
	if now.Sub(g.last[reason]) < time.Second {
		g.held[reason]++
		return
	}
	if n := g.held[reason]; n > 0 {
		format += fmt.Sprintf(" (and %d more like it)", n)
	}
	g.last[reason], g.held[reason] = now, 0
	g.logf(format, a...)
}

// flush says how many lines each reason held back since its last line: without it, the spans
// left out in the last second before the end would go unsaid.
func (g *logLimiter) flush() {
	g.mu.Lock()
	defer g.mu.Unlock()
	reasons := make([]string, 0, len(g.held))
	for r, n := range g.held {
		if n > 0 {
			reasons = append(reasons, r)
		}
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		g.logf("%s like the last %q line held back (one a second is logged)", units.Counted(g.held[r], "more line"), r)
		g.held[r] = 0
	}
}

// logWriter passes the HTTP server's own log lines to the limiter.
type logWriter struct{ g *logLimiter }

func (w logWriter) Write(p []byte) (int, error) {
	w.g.log("http", "%s", strings.TrimSpace(string(p)))
	return len(p), nil
}

// rateMeter turns samples of a running total into a rate over the last second.
type rateMeter struct {
	t [11]time.Time
	v [11]int64
	n int
}

func (r *rateMeter) sample(now time.Time, total int64) {
	i := r.n % len(r.t)
	r.t[i], r.v[i] = now, total
	r.n++
}

func (r *rateMeter) perSec() float64 {
	if r.n < 2 {
		return 0
	}
	newest := (r.n - 1) % len(r.t)
	oldest := 0
	if r.n > len(r.t) {
		oldest = r.n % len(r.t)
	}
	dt := r.t[newest].Sub(r.t[oldest]).Seconds()
	if dt <= 0 {
		return 0
	}
	return float64(r.v[newest]-r.v[oldest]) / dt
}

// maxPEMBytes bounds a TLS certificate or key file: PEM chains are kilobytes, and the bound keeps
// a device or an endless FIFO given by mistake out of memory.
const maxPEMBytes = 1 << 20

// loadKeyPair is tls.LoadX509KeyPair with each file read under maxPEMBytes.
func loadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	cert, err := fileerr.ReadBounded(certFile, "PEM certificate file", maxPEMBytes)
	if err != nil {
		return tls.Certificate{}, err
	}
	key, err := fileerr.ReadBounded(keyFile, "PEM key file", maxPEMBytes)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(cert, key)
}
