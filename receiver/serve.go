package receiver

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"net/http"
	"strconv"
	"strings"
	"sync"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// rawMessage is a request's bytes, decoded by Decode rather than by the generated types. They are
// a buffer of gRPC's pool, handed back (release) once the request is decoded: a fresh buffer for
// every request (gRPC's Materialize) cost a tenth of a listening process's CPU in allocating and
// clearing it. Decode keeps nothing of them.
type rawMessage struct{ buf mem.Buffer }

// requestPool holds the requests' buffers (a variable for the tests).
var requestPool mem.BufferPool = &bytePool{}

// bytePool is a mem.BufferPool that does not clear what it lends: a request's buffer is written
// whole (BufferSlice.CopyTo) before it is read. gRPC's own pools clear every buffer they lend,
// which cost as much as the copy. Buffers are kept by power-of-two size, up to 64 MiB.
type bytePool struct {
	tiers [27]sync.Pool // tier i holds buffers of capacity 1<<i
}

// Get returns a buffer of length n.
func (p *bytePool) Get(n int) *[]byte {
	i := bits.Len(uint(max(n, 1) - 1))
	if i >= len(p.tiers) {
		b := make([]byte, n)
		return &b
	}
	if b, ok := p.tiers[i].Get().(*[]byte); ok {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, 1<<i)
	return &b
}

// Put takes a buffer back.
func (p *bytePool) Put(b *[]byte) {
	c := cap(*b)
	if i := bits.Len(uint(c)) - 1; c > 0 && c == 1<<i && i < len(p.tiers) {
		p.tiers[i].Put(b)
	}
}

// bytes are the request's bytes, valid until release.
func (r *rawMessage) bytes() []byte {
	if r.buf == nil {
		return nil
	}
	return r.buf.ReadOnlyData()
}

// release hands the request's buffer back to the pool.
func (r *rawMessage) release() {
	if r.buf != nil {
		r.buf.Free()
		r.buf = nil
	}
}

// rawCodec hands requests over as bytes and marshals responses as protobuf. It keeps the name
// "proto", so clients see the standard OTLP service.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return encoding.GetCodecV2("proto").Marshal(v)
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if r, ok := v.(*rawMessage); ok {
		r.buf = data.MaterializeToBuffer(requestPool)
		return nil
	}
	return encoding.GetCodecV2("proto").Unmarshal(data, v)
}

func (rawCodec) Name() string { return "proto" }

// traceServiceDesc is OTLP's TraceService with a handler taking raw bytes.
var traceServiceDesc = grpc.ServiceDesc{
	ServiceName: "opentelemetry.proto.collector.trace.v1.TraceService",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Export",
		Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			var raw rawMessage
			if err := dec(&raw); err != nil {
				return nil, err
			}
			defer raw.release()
			return srv.(*Listener).exportGRPC(ctx, raw.bytes())
		},
	}},
	Metadata: "opentelemetry/proto/collector/trace/v1/trace_service.proto",
}

func (l *Listener) exportGRPC(ctx context.Context, body []byte) (*collectortrace.ExportTraceServiceResponse, error) {
	from := "a sender"
	if p, ok := peer.FromContext(ctx); ok {
		from = p.Addr.String()
	}
	if l.cfg.Token != "" {
		md, _ := metadata.FromIncomingContext(ctx)
		if v := md.Get("authorization"); len(v) != 1 || !l.authorized(v[0]) {
			l.rejected.Add(1)
			l.logs.log("auth", "refused a request from %s over gRPC: no valid bearer token", from)
			return nil, status.Error(codes.Unauthenticated, "xfertop listen: a bearer token is required (authorization: Bearer TOKEN)")
		}
	}
	d, err := l.decode(body, from, "gRPC")
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if err := l.take(d); err != nil {
		l.free.Put(d)
		if errors.Is(err, errQueueFull) {
			// Retryable: the exporter (and the Collector) wait for RetryInfo's delay and send again.
			st, _ := status.New(codes.ResourceExhausted, "xfertop listen: "+err.Error()).
				WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(l.cfg.RetryAfter)})
			return nil, st.Err()
		}
		return nil, status.Error(codes.Unavailable, err.Error()) // retryable too: the sender keeps the data
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// sizeLogger logs requests that gRPC refused for being over the message size limit: gRPC refuses
// them before any handler runs.
type sizeLogger struct{ l *Listener }

func (sizeLogger) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context   { return ctx }
func (sizeLogger) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (sizeLogger) HandleConn(context.Context, stats.ConnStats)                       {}
func (s sizeLogger) HandleRPC(ctx context.Context, st stats.RPCStats) {
	end, ok := st.(*stats.End)
	if !ok || end.Error == nil {
		return
	}
	if status.Code(end.Error) == codes.ResourceExhausted && strings.Contains(end.Error.Error(), "larger than max") {
		from := "a sender"
		if p, ok := peer.FromContext(ctx); ok {
			from = p.Addr.String()
		}
		s.l.rejected.Add(1)
		s.l.logs.log("size", "refused a request from %s over gRPC: %v; raise --max-message-bytes (%d now), or make the sender's batches smaller",
			from, status.Convert(end.Error).Message(), s.l.cfg.MaxMessageBytes)
	}
}

// serveHTTP is OTLP/HTTP's POST /v1/traces with a protobuf body (optionally gzip).
func (l *Listener) serveHTTP(w http.ResponseWriter, r *http.Request) {
	from := r.RemoteAddr
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "OTLP/HTTP takes POST", http.StatusMethodNotAllowed)
		return
	}
	if !l.authorized(r.Header.Get("Authorization")) {
		l.rejected.Add(1)
		l.logs.log("auth", "refused a request from %s over HTTP: no valid bearer token", from)
		w.Header().Set("WWW-Authenticate", `Bearer realm="xfertop"`)
		http.Error(w, "xfertop listen: a bearer token is required (Authorization: Bearer TOKEN)", http.StatusUnauthorized)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		l.rejected.Add(1)
		http.Error(w, fmt.Sprintf("xfertop listen takes OTLP/HTTP protobuf (Content-Type: application/x-protobuf), not %q", ct), http.StatusUnsupportedMediaType)
		return
	}
	body, err := l.readBody(w, r)
	if err != nil {
		l.rejected.Add(1)
		code := http.StatusBadRequest
		if errors.Is(err, errTooLarge) {
			code = http.StatusRequestEntityTooLarge
			l.logs.log("size", "refused a request from %s over HTTP: %v; raise --max-message-bytes, or make the sender's batches smaller", from, err)
		}
		http.Error(w, err.Error(), code)
		return
	}
	d, err := l.decode(body, from, "HTTP")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := l.take(d); err != nil {
		l.free.Put(d)
		if errors.Is(err, errQueueFull) {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(l.cfg.RetryAfter.Seconds()))))
			http.Error(w, "xfertop listen: "+err.Error(), http.StatusTooManyRequests)
			return
		}
		var ue *unavailableError
		if errors.As(err, &ue) {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(l.cfg.RetryAfter.Seconds()))))
		}
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK) // an empty ExportTraceServiceResponse is zero bytes
}

var errTooLarge = errors.New("request too large")

// readBody reads the body, gunzipping it if need be, refusing more than the message limit either way.
func (l *Listener) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	limit := int64(l.cfg.MaxMessageBytes)
	// A declared length over the limit is refused before reading: the sender may be waiting for an
	// answer before it sends the body (Expect: 100-continue), or may never send it at all.
	if r.ContentLength > limit {
		return nil, fmt.Errorf("%w: Content-Length %d is over the limit of %d bytes (--max-message-bytes)", errTooLarge, r.ContentLength, limit)
	}
	var src io.Reader = http.MaxBytesReader(w, r.Body, limit)
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		z, err := gzip.NewReader(src)
		if err != nil {
			return nil, fmt.Errorf("gzip body: %w", err)
		}
		defer z.Close()
		src = z
	default:
		return nil, fmt.Errorf("Content-Encoding %q: xfertop listen takes gzip or none", enc)
	}
	body, err := io.ReadAll(io.LimitReader(src, limit+1))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe), err == nil && int64(len(body)) > limit:
		return nil, fmt.Errorf("%w: more than %d bytes (--max-message-bytes)", errTooLarge, limit)
	case err != nil:
		return nil, fmt.Errorf("read body: %w", err)
	}
	return body, nil
}
