package otel_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	collectormetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// receiver is a minimal OTLP trace collector on loopback (gRPC or HTTP/protobuf) that counts what it
// receives: spans, traces, and the host.name of each resource.
type receiver struct {
	collectortrace.UnimplementedTraceServiceServer
	metricsService
	mu     sync.Mutex
	spans  int
	traces map[string]bool
	hosts  map[string]int
	links  int
	errors int
	addr   string
	first  time.Time // the earliest span start received
	grpc   *grpc.Server
	http   *http.Server
	// delay is how long each trace export request waits before it is taken (a slow collector).
	delay time.Duration
	// outage is how long after the first trace export request the collector answers "unavailable"
	// (gRPC Unavailable, HTTP 503) to every one: a collector restarting.
	outage  time.Duration
	firstAt time.Time
}

// down says whether the collector is in its outage, starting it with the first request.
func (r *receiver) down() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.firstAt.IsZero() {
		r.firstAt = time.Now()
	}
	return time.Since(r.firstAt) < r.outage
}

func newReceiver() *receiver {
	r := &receiver{traces: map[string]bool{}, hosts: map[string]int{}}
	r.metricsService.points = map[string]float64{}
	return r
}

func (r *receiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	time.Sleep(r.delay)
	if r.down() {
		return nil, status.Error(codes.Unavailable, "restarting")
	}
	r.record(req)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func (r *receiver) record(req *collectortrace.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		host := ""
		for _, a := range rs.GetResource().GetAttributes() {
			if a.Key == "host.name" {
				host = a.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				r.spans++
				if st := time.Unix(0, int64(sp.StartTimeUnixNano)); r.first.IsZero() || st.Before(r.first) {
					r.first = st
				}
				r.hosts[host]++
				r.traces[string(sp.TraceId)] = true
				r.links += len(sp.Links)
				if sp.GetStatus().GetCode() == 2 {
					r.errors++
				}
			}
		}
	}
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.spans
}

// startGRPC listens on addr ("127.0.0.1:0" for a free port).
func (r *receiver) startGRPC(t testing.TB, addr string) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	r.addr = lis.Addr().String()
	r.grpc = grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(r.grpc, r)
	collectormetrics.RegisterMetricsServiceServer(r.grpc, &r.metricsService)
	go func() { _ = r.grpc.Serve(lis) }()
}

func (r *receiver) startHTTP(t testing.TB) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = lis.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/traces", func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var msg collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if r.down() {
			http.Error(w, "restarting", http.StatusServiceUnavailable)
			return
		}
		r.record(&msg)
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	})
	mux.HandleFunc("/v1/metrics", func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var msg collectormetrics.ExportMetricsServiceRequest
		if err := proto.Unmarshal(body, &msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.metricsService.record(&msg)
		out, _ := proto.Marshal(&collectormetrics.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	})
	r.http = &http.Server{Handler: mux}
	go func() { _ = r.http.Serve(lis) }()
}

func (r *receiver) stop() {
	if r.grpc != nil {
		r.grpc.Stop()
	}
	if r.http != nil {
		_ = r.http.Close()
	}
}

// startSink is an HTTP/protobuf receiver that accepts and discards, counting requests only: the
// cheapest possible collector, so a benchmark measures the exporter, not the receiver's decoding.
func (r *receiver) startSink(t testing.TB) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = lis.Addr().String()
	ok, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	r.http = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		r.mu.Lock()
		r.spans++ // requests, here
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(ok)
	})}
	go func() { _ = r.http.Serve(lis) }()
}
