package receiver

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
)

// Defaults of the receiver.
const (
	DefaultGRPC            = "127.0.0.1:4317" // the OTLP/gRPC port, on loopback
	DefaultHTTP            = "127.0.0.1:4318" // the OTLP/HTTP port, on loopback
	DefaultMaxMessageBytes = 16 << 20         // one request, after decompression
	DefaultMaxSpans        = 1 << 16          // spans in one request
	// DefaultQueueSpans bounds the spans decoded and waiting for the merger. Past it requests are
	// refused with the OTLP retryable answer, so the senders' queues hold the data.
	DefaultQueueSpans = 1 << 20
	// DefaultRetryAfter is the wait a refused sender is asked for (gRPC RetryInfo, HTTP Retry-After).
	DefaultRetryAfter = time.Second
	// DefaultMaxConns caps the connections open at once, gRPC and HTTP together: far more than the
	// senders of a job (one per host, or a few Collectors), far fewer than the file descriptors.
	DefaultMaxConns = 1024
	// DefaultMaxConnIdle closes a connection that carried no request for this long. An exporter
	// sends every few seconds while it has data and reconnects by itself when it has more.
	DefaultMaxConnIdle = 5 * time.Minute
)

// Config configures a Listener.
type Config struct {
	GRPC string // gRPC address; "" serves no gRPC
	HTTP string // HTTP address; "" serves no HTTP
	// TLSCert and TLSKey are PEM files: with them both servers speak TLS only.
	TLSCert, TLSKey string
	// Token, when set, is the bearer token every request must carry (Authorization: Bearer TOKEN).
	Token              string
	MaxMessageBytes    int
	MaxSpansPerRequest int
	QueueSpans         int
	RetryAfter         time.Duration
	ReorderWait        time.Duration
	// Gate, when set, is asked before each request is taken: an error refuses the request as
	// unavailable (gRPC Unavailable, HTTP 503 with Retry-After), as a Collector that cannot keep
	// data answers, so the sender keeps it and retries. A recording that can no longer be written
	// (a full disk) closes the gate: nothing is acknowledged that cannot be kept.
	Gate func() error
	// MaxConns caps the connections open at once (gRPC and HTTP); past it a new one is closed at
	// once and logged. MaxConnIdle closes a connection idle that long (gRPC: no call under way;
	// HTTP: between requests). Zero: the defaults.
	MaxConns    int
	MaxConnIdle time.Duration
	// Logf prints a log line (a refused sender, say); nil prints nothing.
	Logf func(format string, a ...any)
}

// ConfigError is a configuration the listener refuses to start with.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *ConfigError) Unwrap() error { return e.Err }

// ErrExposed is why a non-loopback address is refused without TLS and a token.
var ErrExposed = errors.New("is not a loopback address: serving other machines needs --tls-cert, --tls-key and --auth-token-file, so that what they send is encrypted and authenticated")

func (c *Config) defaults() {
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if c.MaxSpansPerRequest <= 0 {
		c.MaxSpansPerRequest = DefaultMaxSpans
	}
	if c.QueueSpans <= 0 {
		c.QueueSpans = DefaultQueueSpans
	}
	if c.MaxConns <= 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.MaxConnIdle <= 0 {
		c.MaxConnIdle = DefaultMaxConnIdle
	}
	if c.RetryAfter <= 0 {
		c.RetryAfter = DefaultRetryAfter
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
}

// Check refuses what would be unsafe or cannot work: an address that is not loopback without TLS
// and a bearer token, half a certificate, no address at all.
func (c *Config) Check() error {
	if c.GRPC == "" && c.HTTP == "" {
		return &ConfigError{errors.New("give --grpc or --http an address: nothing to listen on")}
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return &ConfigError{errors.New("--tls-cert and --tls-key go together")}
	}
	secured := c.TLSCert != "" && c.Token != ""
	for _, a := range []struct{ flag, addr string }{{"--grpc", c.GRPC}, {"--http", c.HTTP}} {
		if a.addr == "" {
			continue
		}
		host, port, err := net.SplitHostPort(a.addr)
		if err != nil {
			return &ConfigError{fmt.Errorf("%s %q: give host:port (%v)", a.flag, a.addr, err)}
		}
		// The port first: a bad one is what is wrong, whatever the host; and it is the user's
		// mistake (a usage error), not a failure to bind.
		if err := checkPort(port); err != nil {
			return &ConfigError{fmt.Errorf("%s %s: %w", a.flag, a.addr, err)}
		}
		if !Loopback(host) && !secured {
			return &ConfigError{fmt.Errorf("%s %s %w", a.flag, a.addr, ErrExposed)}
		}
	}
	return nil
}

// checkPort refuses a port that is not a number from 0 to 65535 or a service name this machine
// knows (0 or none: any free port).
func checkPort(port string) error {
	if port == "" {
		return nil
	}
	if n, err := strconv.Atoi(port); err == nil {
		if n < 0 || n > 65535 {
			return fmt.Errorf("port %d is out of range (a port is 0 to 65535)", n)
		}
		return nil
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("port %q is neither a number (0 to 65535) nor a service name this machine knows", port)
	}
	return nil
}

// Loopback reports whether host names this machine only: localhost or a loopback IP. An empty host
// (every interface) is not.
func Loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
