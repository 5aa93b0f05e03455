package receiver

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	collectormetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// metricsServiceDesc is OTLP's MetricsService. A sender's --otlp exports metrics beside its spans;
// the console analyses the events the spans carry, so listen takes the metrics (behind the same
// token and size limits) and discards them, rather than have every direct sender count them dropped.
var metricsServiceDesc = grpc.ServiceDesc{
	ServiceName: "opentelemetry.proto.collector.metrics.v1.MetricsService",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Export",
		Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			var raw rawMessage
			if err := dec(&raw); err != nil {
				return nil, err
			}
			raw.release() // the metrics themselves come to xfertop in its spans
			return srv.(*Listener).metricsGRPC(ctx)
		},
	}},
	Metadata: "opentelemetry/proto/collector/metrics/v1/metrics_service.proto",
}

func (l *Listener) metricsGRPC(ctx context.Context) (*collectormetrics.ExportMetricsServiceResponse, error) {
	if l.cfg.Token != "" {
		md, _ := metadata.FromIncomingContext(ctx)
		if v := md.Get("authorization"); len(v) != 1 || !l.authorized(v[0]) {
			from := "a sender"
			if p, ok := peer.FromContext(ctx); ok {
				from = p.Addr.String()
			}
			l.rejected.Add(1)
			l.logs.log("auth", "refused a metrics request from %s over gRPC: no valid bearer token", from)
			return nil, status.Error(codes.Unauthenticated, "xfertop listen: a bearer token is required (authorization: Bearer TOKEN)")
		}
	}
	return &collectormetrics.ExportMetricsServiceResponse{}, nil
}

// serveMetricsHTTP is OTLP/HTTP's POST /v1/metrics: checked as /v1/traces is, then discarded.
func (l *Listener) serveMetricsHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "OTLP/HTTP takes POST", http.StatusMethodNotAllowed)
		return
	}
	if !l.authorized(r.Header.Get("Authorization")) {
		l.rejected.Add(1)
		l.logs.log("auth", "refused a metrics request from %s over HTTP: no valid bearer token", r.RemoteAddr)
		w.Header().Set("WWW-Authenticate", `Bearer realm="xfertop"`)
		http.Error(w, "xfertop listen: a bearer token is required (Authorization: Bearer TOKEN)", http.StatusUnauthorized)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		l.rejected.Add(1)
		http.Error(w, fmt.Sprintf("xfertop listen takes OTLP/HTTP protobuf (Content-Type: application/x-protobuf), not %q", ct), http.StatusUnsupportedMediaType)
		return
	}
	if _, err := l.readBody(w, r); err != nil {
		l.rejected.Add(1)
		code := http.StatusBadRequest
		if errors.Is(err, errTooLarge) {
			code = http.StatusRequestEntityTooLarge
		}
		http.Error(w, err.Error(), code)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK) // an empty ExportMetricsServiceResponse is zero bytes
}
